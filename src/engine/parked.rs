//! A slab for payloads too wide for an event: the event holds the payload's slot.

/// Payloads too wide for an event, kept aside while their event is queued: the event holds
/// the payload's 4-byte slot and its handler takes the payload back, so events stay 16 bytes
/// (a queue entry 32) however wide a rare event's payload is. Free slots form a list through
/// the slots themselves (no second vector), reused last freed first: a run parks
/// deterministically and allocates only while the most payloads parked at once grows. Each
/// parked payload is taken exactly once (its event is never cancelled).
#[derive(Debug)]
pub struct Parked<T> {
    slots: Vec<Slot<T>>,
    /// The last freed slot, or `u32::MAX`.
    free: u32,
}

#[derive(Debug)]
enum Slot<T> {
    Full(T),
    /// Free; the slot freed before it (or `u32::MAX`).
    Free(u32),
}

impl<T> Default for Parked<T> {
    fn default() -> Self {
        Parked {
            slots: Vec::new(),
            free: u32::MAX,
        }
    }
}

impl<T> Parked<T> {
    /// Keeps `value` until [`Parked::take`]; its slot.
    pub fn park(&mut self, value: T) -> u32 {
        if self.free != u32::MAX {
            let slot = self.free;
            let old = std::mem::replace(&mut self.slots[slot as usize], Slot::Full(value));
            let Slot::Free(next) = old else {
                unreachable!("the free list holds free slots")
            };
            self.free = next;
            return slot;
        }
        // The queue holds one event per parked payload, and fewer than 2^32 of them.
        let slot = u32::try_from(self.slots.len())
            .ok()
            .filter(|&s| s != u32::MAX)
            .expect("fewer than 2^32 - 1 payloads parked at once");
        self.slots.push(Slot::Full(value));
        slot
    }

    /// The payload parked in `slot`, which is free again.
    pub fn take(&mut self, slot: u32) -> T {
        match std::mem::replace(&mut self.slots[slot as usize], Slot::Free(self.free)) {
            Slot::Full(value) => {
                self.free = slot;
                value
            }
            Slot::Free(_) => unreachable!("a parked payload is taken once"),
        }
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn parked_slots_are_reused_last_freed_first() {
        let mut p = super::Parked::default();
        let (a, b) = (p.park('a'), p.park('b'));
        assert_eq!((a, b), (0, 1));
        assert_eq!(p.take(a), 'a');
        assert_eq!(p.park('c'), 0);
        assert_eq!((p.take(0), p.take(1)), ('c', 'b'));
        assert_eq!(p.park('d'), 1);
    }
}
