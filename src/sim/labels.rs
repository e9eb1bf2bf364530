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
        if let Some(&l) = self.w.label_ids.get(&item) {
            return l;
        }
        let spec = self.w.spec;
        let (wi, name) = match item {
            Item::Group(g) => {
                let g = &self.tasks.groups[g];
                (g.workload, &spec.workloads[g.workload].tasks[g.index].name)
            }
            Item::Service(s) => {
                let s = &self.services.list[s];
                (
                    s.workload,
                    &spec.workloads[s.workload].services[s.index].name,
                )
            }
            Item::Job(j) => {
                let j = &self.jobs[j];
                (
                    j.workload,
                    &spec.workloads[j.workload].training[j.index].name,
                )
            }
            Item::Actors(a) => {
                let a = &self.actors.groups[a];
                (a.workload, &spec.workloads[a.workload].actors[a.index].name)
            }
        };
        let text = format!("{}.{name}", spec.workloads[wi].name);
        let l = self.w.tl.name(&text);
        self.w.label_ids.insert(item, l);
        l
    }
}
