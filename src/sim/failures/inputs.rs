//! Inputs in flight from a node that dies.
//!
//! A task reading its inputs (restoring spilled ones from a holder's disk, or fetching them
//! from a holder's object store) when a holder node crashes does not get them: the copy it was
//! reading is gone. Ray's pull of an object whose only copy was lost waits while the object's
//! owner rebuilds it by lineage reconstruction, and completes from the new copy. So the
//! model stops the task's restore or fetch at the crash (its flows leave the network; the
//! task keeps its allocation), counts the lost outputs it needs as needed by its group (so
//! `lose_outputs` rebuilds them even when every task of that group has started), and starts
//! its restore and fetch again once none of its inputs is still being rebuilt: from the
//! rebuilt copies' nodes, and without an input that could not be rebuilt (as the simulation
//! treats consumers of lost objects elsewhere: they run, and the object counts as lost).

use crate::placement::NodeId;
use crate::sim::World;
use crate::sim::tasks::Tasks;

impl Tasks {
    /// Tasks waiting for lost inputs whose inputs are all settled (rebuilt or given up on)
    /// read them again.
    pub(crate) fn resume_reads(&mut self, world: &mut World<'_>) {
        let ready: Vec<u32> = world
            .net
            .await_inputs
            .iter()
            .copied()
            .filter(|&t| {
                let gi = self.group_of(t);
                self.input_parts(world, t, gi)
                    .iter()
                    .all(|(pt, _)| !self.rebuild[*pt])
            })
            .collect();
        for t in ready {
            world.net.await_inputs.remove(&t);
            let gi = self.group_of(t);
            let node = self.node[t as usize] as usize;
            let units = world.device_units(&self.groups[gi].request);
            self.start_task_work(world, t, gi, node, units);
        }
    }
}

impl Tasks {
    /// Node `n` crashed: stop every restore or fetch reading from it (tasks on `n` itself were
    /// killed already) and let those tasks wait for their inputs.
    pub(super) fn stop_reads_from(&mut self, world: &mut World<'_>, n: NodeId) {
        let mut hit: Vec<u32> = world
            .net
            .fetch_from
            .iter()
            .filter(|(_, from)| from.contains(&(n as u32)))
            .map(|(t, _)| *t)
            .collect();
        hit.sort_unstable();
        for t in hit {
            if self.alloc[t as usize].is_none() {
                continue;
            }
            world.cancel_fetch(t);
            // A fetch paying its fixed part has a `TransferGo` queued for this attempt: a new
            // attempt number makes it stale, as for a task killed with its node.
            self.epoch[t as usize] += 1;
            world.net.await_inputs.insert(t);
        }
    }

    /// Whether a group has a task waiting for lost inputs (so they must be rebuilt).
    pub(super) fn group_awaits_inputs(&self, world: &World<'_>, gi: usize) -> bool {
        world
            .net
            .await_inputs
            .iter()
            .any(|t| self.group_of(*t) == gi)
    }
}
