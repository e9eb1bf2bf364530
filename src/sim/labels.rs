//! Timeline labels (`workload.item`) formatted and interned once per item, so that work
//! recorded per task, batch or step costs the same whatever the names' lengths (issue 16: a
//! 70,000-character workload name made a recorded run 29× slower when every span formatted
//! and hashed it).

use super::World;

/// The kind of item a label names.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(super) enum Kind {
    Tasks,
    Services,
    Training,
    Actors,
}

/// The item a label names: item `index` of `kind` in workload `workload` (a task group, a
/// service, a training job, an actor group). Each component says which of its own is which
/// (`Tasks::label`, ...).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(super) struct Item {
    pub(super) kind: Kind,
    pub(super) workload: usize,
    pub(super) index: usize,
}

impl World<'_> {
    /// The timeline's label id of `item`: `workload.item`, interned on first use.
    pub(super) fn label_id(&mut self, item: Item) -> u32 {
        if let Some(&l) = self.label_ids.get(&item) {
            return l;
        }
        let w = &self.spec.workloads[item.workload];
        let name = match item.kind {
            Kind::Tasks => &w.tasks[item.index].name,
            Kind::Services => &w.services[item.index].name,
            Kind::Training => &w.training[item.index].name,
            Kind::Actors => &w.actors[item.index].name,
        };
        let text = format!("{}.{name}", w.name);
        let l = self.tl.name(&text);
        self.label_ids.insert(item, l);
        l
    }
}

impl super::tasks::Tasks {
    /// The label item of task group `g`.
    pub(super) fn label(&self, g: usize) -> Item {
        let g = &self.groups[g];
        Item {
            kind: Kind::Tasks,
            workload: g.workload,
            index: g.index,
        }
    }
}

impl super::services::Services {
    /// The label item of service `s`.
    pub(super) fn label(&self, s: usize) -> Item {
        let s = &self.list[s];
        Item {
            kind: Kind::Services,
            workload: s.workload,
            index: s.index,
        }
    }
}

impl super::training::Jobs {
    /// The label item of training job `j`.
    pub(super) fn label(&self, j: usize) -> Item {
        let j = &self.list[j];
        Item {
            kind: Kind::Training,
            workload: j.workload,
            index: j.index,
        }
    }
}

impl super::actors::Actors {
    /// The label item of actor group `g`.
    pub(super) fn label(&self, g: usize) -> Item {
        let g = &self.groups[g];
        Item {
            kind: Kind::Actors,
            workload: g.workload,
            index: g.index,
        }
    }
}
