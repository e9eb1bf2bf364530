//! Timeline labels (`workload.item`) formatted and interned once per item, so that work
//! recorded per task, batch or step costs the same whatever the names' lengths (issue 16: a
//! 70,000-character workload name made a recorded run 29× slower when every span formatted
//! and hashed it).

use super::Sim;

/// The item a label names.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(super) enum Item {
    /// A task group (index into `Sim::groups`).
    Group(usize),
    /// A service (index into `Sim::services`).
    Service(usize),
    /// A training job (index into `Sim::jobs`).
    Job(usize),
    /// An actor group (index into `Sim::actor_groups`).
    Actors(usize),
}

impl Sim<'_> {
    /// The timeline's label id of `item`: `workload.item`, interned on first use.
    pub(super) fn label_id(&mut self, item: Item) -> u32 {
        if let Some(&l) = self.label_ids.get(&item) {
            return l;
        }
        let spec = self.spec;
        let text = match item {
            Item::Group(g) => {
                let g = &self.groups[g];
                let w = &spec.workloads[g.workload];
                format!("{}.{}", w.name, w.tasks[g.index].name)
            }
            Item::Service(s) => {
                let s = &self.services[s];
                let w = &spec.workloads[s.workload];
                format!("{}.{}", w.name, w.services[s.index].name)
            }
            Item::Job(j) => {
                let j = &self.jobs[j];
                let w = &spec.workloads[j.workload];
                format!("{}.{}", w.name, w.training[j.index].name)
            }
            Item::Actors(a) => {
                let a = &self.actor_groups[a];
                let w = &spec.workloads[a.workload];
                format!("{}.{}", w.name, w.actors[a.index].name)
            }
        };
        let l = self.tl.name(&text);
        self.label_ids.insert(item, l);
        l
    }
}
