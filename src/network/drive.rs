//! The one event loop step of a standalone run on a [`FlowNet`]: the flow-file replay
//! (`flowfile`), a transport plan (`transport::exec`), a collective priced without the
//! engine (`collective::run_rounds`, the round runner) and the flow benches all advance their
//! network with [`FlowNet::step`], so "what happens next" is decided in one place: the next
//! flow completion, unless the caller's next event (an arrival, a stage's timer) comes first.
//! A simulation run drives its one network from the engine's queue instead (`sim::wire`).
//!
//! Architecture invariant: knows nothing of what the flows are for; the caller removes a
//! finished flow (alone, or with the others done at that instant) and adds arrivals.

use super::flows::{FlowId, FlowNet};

/// What one [`FlowNet::step`] did.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Step {
    /// The clock moved to this flow's completion; the caller removes it.
    Finished(FlowId),
    /// The clock moved to the caller's next event (`until`), before any completion.
    Reached,
    /// No flow can finish (none left, or each crosses a link with no capacity) and the
    /// caller has no next event.
    Stuck,
}

impl FlowNet {
    /// Move to the next event: the next flow completion when it comes no later than `until`
    /// (a completion wins a tie: a finished flow shares nothing from then on), else `until`.
    /// `clock` is the caller's time, moved by the same amount as the network's: by the
    /// completion's delay, or set to `until` exactly.
    pub fn step(&mut self, clock: &mut f64, until: Option<f64>) -> Step {
        if let Some((f, dt)) = self.next_completion()
            && until.is_none_or(|u| *clock + dt <= u)
        {
            self.advance(dt);
            *clock += dt;
            return Step::Finished(f);
        }
        let Some(u) = until else {
            return Step::Stuck;
        };
        self.advance(u - *clock);
        *clock = u;
        Step::Reached
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn completions_first_then_the_callers_event_and_stuck_when_nothing_can_move() {
        // One 10 B/s link: 20 B alone take 2 s.
        let mut n = FlowNet::new(vec![10.0]);
        let f = n.add(vec![0], 20.0);
        let mut clock = 0.0;
        // The caller's event at 1 s comes first.
        assert_eq!(n.step(&mut clock, Some(1.0)), Step::Reached);
        assert_eq!(clock, 1.0);
        // A tie at 2 s goes to the completion.
        assert_eq!(n.step(&mut clock, Some(2.0)), Step::Finished(f));
        assert_eq!(clock, 2.0);
        n.remove(f);
        assert_eq!(n.step(&mut clock, None), Step::Stuck);
        // A flow over a link with no capacity never finishes.
        let mut dead = FlowNet::new(vec![0.0]);
        dead.add(vec![0], 1.0);
        assert_eq!(dead.step(&mut 0.0, None), Step::Stuck);
        assert_eq!(dead.step(&mut 0.0, Some(5.0)), Step::Reached);
    }
}
