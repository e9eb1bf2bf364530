//! Tenants' rules on the resource view: quotas (what each tenant holds against its quota),\n//! node restrictions (accelerators, exclusive nodes) and the reasons a node is refused.

use super::*;

impl ClusterState {
    /// The tenants' quotas as resource ids, and the flat tables that count what they hold.
    pub(super) fn intern_quotas(&mut self, spec: &Spec, ids: &mut ResourceIds) {
        let mut off = 0;
        for (t, rules) in spec.tenants.iter().zip(self.tenants.iter_mut()) {
            rules.quota = Request::from_amounts(
                t.quota
                    .iter()
                    .map(|(k, v)| (ids.get_or_insert(k), to_fixed(*v)))
                    .collect(),
            )
            .amounts;
            // `from_amounts` drops zero amounts; a zero quota still forbids that resource.
            for (k, v) in &t.quota {
                let id = ids.get_or_insert(k);
                if to_fixed(*v) <= 0 && !rules.quota.iter().any(|e| e.0 == id) {
                    rules.quota.push((id, 0));
                }
            }
            rules.quota.sort_by_key(|e| e.0);
            self.quota_off.push(off);
            off += rules.quota.len();
        }
        self.quota_held = vec![0; off];
    }

    /// Add (`sign` 1) or remove (-1) what an allocation of `amounts` by `tenant` holds on
    /// `node` to the quota tables; the cluster table only counts alive nodes.
    pub(super) fn quota_account(
        &mut self,
        node: NodeId,
        amounts: &[(usize, i64)],
        tenant: Option<usize>,
        sign: i64,
    ) {
        let Some(t) = tenant else { return };
        let Some(rules) = self.tenants.get(t) else {
            return;
        };
        let off = self.quota_off[t];
        let n = &mut self.nodes[node];
        // Amounts are a request's, sorted by id: each quota resource is found by binary
        // search, not a scan (quotas and requests of 20,000 custom resources spent minutes
        // here, issue 42).
        debug_assert!(amounts.windows(2).all(|w| w[0].0 < w[1].0));
        for (k, &(id, _)) in rules.quota.iter().enumerate() {
            let a = amounts
                .binary_search_by_key(&id, |e| e.0)
                .map(|i| amounts[i].1)
                .unwrap_or(0);
            if a == 0 {
                continue;
            }
            let held = &mut n.quota_held[off + k];
            // Never below zero: a free after a reset of the node gives back nothing.
            let d = if sign > 0 { a } else { -a.min(*held) };
            *held += d;
            if n.alive {
                self.quota_held[off + k] += d;
            }
        }
    }

    /// What tenant `tenant` holds now, on alive nodes, of `resource` (an id); tracked only
    /// for resources its quota names (0 otherwise).
    pub fn tenant_held(&self, tenant: usize, resource: usize) -> i64 {
        let Some(rules) = self.tenants.get(tenant) else {
            return 0;
        };
        rules
            .quota
            .iter()
            .position(|e| e.0 == resource)
            .map(|k| self.quota_held[self.quota_off[tenant] + k])
            .unwrap_or(0)
    }

    pub(crate) fn fmt_amount(&self, id: usize, a: i64) -> String {
        if id == res::MEMORY || id == res::OBJECT_STORE_MEMORY {
            crate::units::Bytes(from_fixed(a).max(0.0) as u64).to_string()
        } else {
            crate::units::sig3(from_fixed(a))
        }
    }

    /// Whether `tenant` may take `r` now without holding more than its quota of any resource
    /// (what it holds on alive nodes plus `r`). No tenant, or no quota: always.
    pub fn quota_allows(&self, tenant: Option<usize>, r: &Request) -> bool {
        let Some(t) = tenant else { return true };
        let Some(rules) = self.tenants.get(t) else {
            return true;
        };
        let off = self.quota_off[t];
        rules
            .quota
            .iter()
            .enumerate()
            .all(|(k, &(id, q))| r.get(id) == 0 || self.quota_held[off + k] + r.get(id) <= q)
    }

    /// Which quota keeps `tenant` from taking `r` now, if one does: `tenant `a` quota GPU:
    /// holds 2, requests 1, quota 2` (the first such resource in id order).
    pub fn quota_blocked_by(&self, tenant: Option<usize>, r: &Request) -> Option<String> {
        let t = tenant?;
        let rules = self.tenants.get(t)?;
        let off = self.quota_off[t];
        rules.quota.iter().enumerate().find_map(|(k, &(id, q))| {
            let want = r.get(id);
            let held = self.quota_held[off + k];
            (want > 0 && held + want > q).then(|| {
                format!(
                    "tenant `{}` quota {}: holds {}, requests {}, quota {}",
                    rules.name,
                    self.ids.name(id),
                    self.fmt_amount(id, held),
                    self.fmt_amount(id, want),
                    self.fmt_amount(id, q)
                )
            })
        })
    }

    /// Whether `r` alone is more than `tenant`'s quota of some resource (it could never be
    /// placed): `tenant `a` quota GPU: requests 4, more than the quota 2`.
    pub fn quota_exceeded_by(&self, tenant: Option<usize>, r: &Request) -> Option<String> {
        let rules = self.tenants.get(tenant?)?;
        rules.quota.iter().find_map(|&(id, q)| {
            let want = r.get(id);
            (want > q).then(|| {
                format!(
                    "tenant `{}` quota {}: requests {}, more than the quota {}",
                    rules.name,
                    self.ids.name(id),
                    self.fmt_amount(id, want),
                    self.fmt_amount(id, q)
                )
            })
        })
    }

    pub fn tenant_index(&self, name: &str) -> Option<usize> {
        self.tenants.iter().position(|t| t.name == name)
    }

    /// Tenant `only_nodes` and `accelerators` pass (the static part of the tenant rules).
    pub fn tenant_static_ok(&self, node: NodeId, tenant: Option<usize>) -> bool {
        match tenant.and_then(|t| self.tenants.get(t)) {
            Some(t) => {
                let n = &self.nodes[node];
                t.only_nodes.iter().all(|c| c.matches(&n.labels))
                    && t.accelerators
                        .as_ref()
                        .is_none_or(|allowed| accelerators_ok(n, allowed))
            }
            None => true,
        }
    }

    /// Why the static tenant rules exclude `node` for `tenant` (`None`: they pass), as
    /// `explain` shows it: `tenant `t` only_nodes KEY = VALUE` or
    /// `tenant `t` accelerators [H100_SXM]: node has L4`.
    pub fn tenant_static_reason(&self, node: NodeId, tenant: Option<usize>) -> Option<String> {
        let t = self.tenants.get(tenant?)?;
        let n = &self.nodes[node];
        if let Some(c) = t.only_nodes.iter().find(|c| !c.matches(&n.labels)) {
            return Some(format!(
                "tenant `{}` only_nodes {}",
                t.name,
                crate::placement::explain::describe_constraint(c)
            ));
        }
        let allowed = t.accelerators.as_ref()?;
        if accelerators_ok(n, allowed) {
            return None;
        }
        let has = if n.topo.accelerators.is_empty() {
            "devices of no declared accelerator kind".to_string()
        } else {
            n.topo.accelerators.join(", ")
        };
        Some(format!(
            "tenant `{}` accelerators [{}]: node has {has}",
            t.name,
            allowed.join(", ")
        ))
    }

    /// A tenant this one may not share a node with that currently has work on `node`.
    pub fn tenant_conflict(&self, node: NodeId, tenant: Option<usize>) -> Option<usize> {
        let t = self.tenants.get(tenant?)?;
        let n = &self.nodes[node];
        t.conflicts.iter().copied().find(|&c| n.tenant_count(c) > 0)
    }

    /// Both tenant rules pass for `tenant` on `node` now.
    pub fn tenant_allows(&self, node: NodeId, tenant: Option<usize>) -> bool {
        self.tenant_static_ok(node, tenant) && self.tenant_conflict(node, tenant).is_none()
    }

    /// The node is alive and both tenant rules pass for `tenant` there now (what a task
    /// queued at the node needs before it may start; resources aside).
    pub fn is_alive_and_allowed(&self, node: NodeId, tenant: Option<usize>) -> bool {
        self.nodes[node].alive && self.tenant_allows(node, tenant)
    }
}
