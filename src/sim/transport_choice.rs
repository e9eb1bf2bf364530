//! Which transport each data movement uses: the run's override (`--transport`), else the
//! item's selection, else its workload's, else Ray's object store; then the tenant's rules
//! (`scenario::transport`), whose fallback replaces a forbidden choice and is noted in the
//! run's network models. Only an override can be forbidden: `check` rejects forbidden
//! selections in the scenario itself.

use super::World;
use super::network::MovementKind;
use super::tasks::Tasks;

impl World<'_> {
    /// The transport a movement uses: the run's override (`--transport`), else the first of
    /// `declared` that is set (the item's own, then its workload's), else the object store.
    pub(super) fn transport_named(&self, declared: [&Option<String>; 2]) -> String {
        let [item, workload] = declared;
        self.transport_override
            .clone()
            .or_else(|| item.clone())
            .or_else(|| workload.clone())
            .unwrap_or_else(|| "object_store".to_string())
    }

    /// The transport a service's KV-cache handoff uses: the run's override, else `declared`.
    pub(super) fn transport_or(&self, declared: &str) -> String {
        self.transport_override
            .clone()
            .unwrap_or_else(|| declared.to_string())
    }

    /// `name` as tenant `tenant` may use it for `kind`; its fallback, noted, when the rules
    /// forbid it (only a run's transport override can: `check` rejects forbidden selections).
    pub(super) fn allowed_or_fallback(
        &mut self,
        kind: MovementKind,
        tenant: Option<usize>,
        name: String,
        what: &str,
    ) -> String {
        let Some(t) = tenant else { return name };
        match crate::scenario::transport::allowed_transport(self.spec, t, &name) {
            Ok(()) => name,
            Err(why) => {
                let used = crate::scenario::transport::fallback_transport(self.spec, t);
                self.net.note(
                    kind,
                    true,
                    format!("{what}: transport {name} not used ({why}); {used} instead"),
                );
                used.to_string()
            }
        }
    }
}

impl Tasks {
    /// The transport a task of group `gi` moves its inputs with: the run's override, else the
    /// group's, else its workload's, else the object store — unless its tenant's rules forbid
    /// it (only an override can: `check` rejects forbidden selections), when the tenant's
    /// fallback is used and the run says so.
    pub(crate) fn fetch_transport(&mut self, world: &mut World<'_>, gi: usize) -> String {
        let g = &self.groups[gi];
        let w = &world.spec.workloads[g.workload];
        let ts = &w.tasks[g.index];
        let name = world.transport_named([&ts.transport, &w.transport]);
        if g.tenant.is_none() {
            return name; // no rules, and no note text to build on every fetch
        }
        let (tenant, what) = (g.tenant, format!("object fetch {}.{}", w.name, ts.name));
        world.allowed_or_fallback(MovementKind::Fetch, tenant, name, &what)
    }
}
