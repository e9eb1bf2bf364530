//! One list per link, allocated only for the links that ever hold something: a network over
//! a large cluster has tens of thousands of links (84,256 on `bench`'s 1,000-node fat-tree)
//! while a light load crosses a few of them, and a `Vec` per link cost 24 bytes each to
//! initialize and drop whether used or not — a third of a 1,000-flow run (issue 44).
//!
//! Each link holds a 4-byte slot, zero (no list yet) when the network is made, so the slots
//! come from zeroed memory in one allocation; a link's list is made the first time it is
//! written. Reading a link that never had one reads an empty list.

use std::ops::{Index, IndexMut};

#[derive(Debug, Clone)]
pub(super) struct LinkLists<T> {
    /// Per link: its list's position in `lists`, or 0 (`lists[0]` stays empty).
    slot: Vec<u32>,
    lists: Vec<Vec<T>>,
}

impl<T> Default for LinkLists<T> {
    fn default() -> Self {
        LinkLists {
            slot: Vec::new(),
            lists: vec![Vec::new()],
        }
    }
}

impl<T> LinkLists<T> {
    /// `links` links, every list empty.
    pub fn new(links: usize) -> Self {
        LinkLists {
            slot: vec![0; links],
            lists: vec![Vec::new()],
        }
    }

    /// Heap bytes per link before any list is made.
    pub const BYTES_PER_LINK: usize = std::mem::size_of::<u32>();
}

impl<T> Index<usize> for LinkLists<T> {
    type Output = Vec<T>;
    #[inline]
    fn index(&self, l: usize) -> &Vec<T> {
        &self.lists[self.slot[l] as usize]
    }
}

impl<T> IndexMut<usize> for LinkLists<T> {
    #[inline]
    fn index_mut(&mut self, l: usize) -> &mut Vec<T> {
        let mut s = self.slot[l] as usize;
        if s == 0 {
            s = self.lists.len();
            self.lists.push(Vec::new());
            self.slot[l] = s as u32;
        }
        &mut self.lists[s]
    }
}

#[cfg(test)]
mod tests {
    use super::LinkLists;

    #[test]
    fn unwritten_links_read_empty_and_written_ones_keep_their_lists() {
        let mut v: LinkLists<u32> = LinkLists::new(5);
        assert!((0..5).all(|l| v[l].is_empty()));
        v[3].push(7);
        v[1].push(2);
        v[3].push(8);
        assert_eq!((v[3].as_slice(), v[1].as_slice()), (&[7, 8][..], &[2][..]));
        assert!(v[0].is_empty() && v[2].is_empty() && v[4].is_empty());
        v[3].clear();
        assert!(v[3].is_empty() && v[1] == [2]);
    }
}
