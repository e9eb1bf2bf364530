//! Resource names, fixed-point amounts and Ray's per-instance allocation of unit-instance
//! resources.
//!
//! Ray keeps every amount as a `FixedPoint` of 1/10000 units
//! (`src/ray/common/scheduling/fixed_point.h`, `RESOURCE_UNIT_SCALING = 10000`), so `0.1 + 0.2`
//! is exactly `0.3` and repeated allocate/free never drifts. We do the same with `i64`.

use crate::scenario::workload::UNIT_INSTANCE;
use std::collections::{BTreeMap, HashMap};

/// Ray `FixedPoint`: amounts are kept in 1/10000 units (`fixed_point.h`).
pub const SCALE: i64 = 10_000;

/// Predefined resource ids (Ray's `PredefinedResourcesEnum` has CPU, MEM, GPU, OBJECT_STORE_MEM;
/// ours are numbered in the order of [`crate::scenario::workload::BUILTIN_RESOURCES`]).
pub const CPU: usize = 0;
pub const GPU: usize = 1;
pub const MEMORY: usize = 2;
pub const OBJECT_STORE_MEMORY: usize = 3;
/// Number of predefined resources; ids from here on are custom ("extra") resources.
pub const PREDEFINED: usize = 4;

/// `FixedPoint(double)`: round to the nearest 1/10000 (saturating for absurd byte counts).
pub fn to_fixed(x: f64) -> i64 {
    if !x.is_finite() {
        return if x > 0.0 { i64::MAX } else { 0 };
    }
    (x * SCALE as f64).round() as i64
}

/// Back to a float, for display and ratios.
pub fn from_fixed(x: i64) -> f64 {
    x as f64 / SCALE as f64
}

/// Interned resource names. Ids 0..=3 are always CPU, GPU, memory, object_store_memory.
#[derive(Debug, Clone)]
pub struct ResourceIds {
    names: Vec<String>,
    index: HashMap<String, usize>,
    unit: Vec<bool>,
}

impl Default for ResourceIds {
    fn default() -> Self {
        Self::new()
    }
}

impl ResourceIds {
    pub fn new() -> ResourceIds {
        let mut ids = ResourceIds {
            names: Vec::new(),
            index: HashMap::new(),
            unit: Vec::new(),
        };
        for n in crate::scenario::workload::BUILTIN_RESOURCES {
            ids.get_or_insert(n);
        }
        ids
    }

    pub fn id(&self, name: &str) -> Option<usize> {
        self.index.get(name).copied()
    }

    pub fn get_or_insert(&mut self, name: &str) -> usize {
        if let Some(&i) = self.index.get(name) {
            return i;
        }
        let i = self.names.len();
        self.names.push(name.to_string());
        self.index.insert(name.to_string(), i);
        self.unit.push(UNIT_INSTANCE.contains(&name));
        i
    }

    pub fn name(&self, id: usize) -> &str {
        &self.names[id]
    }

    pub fn len(&self) -> usize {
        self.names.len()
    }

    pub fn is_empty(&self) -> bool {
        self.names.is_empty()
    }

    /// Tracked per device instance (Ray `predefined_unit_instance_resources` +
    /// `custom_unit_instance_resources`, `src/ray/common/ray_config_def.h`).
    pub fn is_unit_instance(&self, id: usize) -> bool {
        self.unit.get(id).copied().unwrap_or(false)
    }

    /// Whether `id` is one of Ray's predefined resources (CPU, GPU, memory, object store).
    pub fn is_predefined(id: usize) -> bool {
        id < PREDEFINED
    }
}

/// A resource demand: `(resource id, amount in 1/10000)` sorted by id, zero entries dropped
/// (Ray `ResourceRequest` / `ResourceSet` never stores zeros).
///
/// `device_memory` (Orrery's, not Ray's; the DSL's `device_memory`) is the device memory in
/// bytes the work needs on each device instance it holds (0: none declared). It applies to
/// every unit-instance resource of the request: a node whose devices are all smaller is
/// infeasible, and device memory is a consumable per instance, so work sharing a device by
/// fractions must also fit its memory (see [`mask_by_memory`]).
#[derive(Clone, Debug, PartialEq, Default)]
pub struct Request {
    pub amounts: Vec<(usize, i64)>,
    pub device_memory: u64,
}

impl Request {
    pub fn from_map(map: &BTreeMap<String, f64>, ids: &mut ResourceIds) -> Request {
        Request::from_amounts(
            map.iter()
                .map(|(k, v)| (ids.get_or_insert(k), to_fixed(*v)))
                .collect(),
        )
    }

    /// Normalise: sort by id, add duplicates, drop non-positive amounts.
    pub fn from_amounts(mut v: Vec<(usize, i64)>) -> Request {
        v.sort_by_key(|e| e.0);
        let mut out: Vec<(usize, i64)> = Vec::with_capacity(v.len());
        for (id, a) in v {
            match out.last_mut() {
                Some(last) if last.0 == id => last.1 = last.1.saturating_add(a),
                _ => out.push((id, a)),
            }
        }
        out.retain(|e| e.1 > 0);
        Request {
            amounts: out,
            device_memory: 0,
        }
    }

    /// The same request needing `bytes` of device memory on each device it holds.
    pub fn with_device_memory(mut self, bytes: u64) -> Request {
        self.device_memory = bytes;
        self
    }

    /// The amount of resource `id` (0 when not asked for). By binary search over the sorted
    /// amounts: callers look up every resource of a quota or a node in turn, which a scan
    /// made quadratic in the number of custom resources (issue 42).
    pub fn get(&self, id: usize) -> i64 {
        self.amounts
            .binary_search_by_key(&id, |e| e.0)
            .map(|k| self.amounts[k].1)
            .unwrap_or(0)
    }

    pub fn is_empty(&self) -> bool {
        self.amounts.is_empty()
    }

    /// Amounts added; device memory per device is the larger of the two (it is per device,
    /// not a total).
    pub fn sum(&self, other: &Request) -> Request {
        let mut v = self.amounts.clone();
        v.extend_from_slice(&other.amounts);
        Request::from_amounts(v).with_device_memory(self.device_memory.max(other.device_memory))
    }

    /// Human-readable, for `explain` and test messages: `{CPU: 1, GPU: 0.5}`.
    pub fn display(&self, ids: &ResourceIds) -> String {
        let parts: Vec<String> = self
            .amounts
            .iter()
            .map(|(id, a)| format!("{}: {}", ids.name(*id), from_fixed(*a)))
            .collect();
        if self.device_memory > 0 {
            format!(
                "{{{}}} with {} per device",
                parts.join(", "),
                crate::units::Bytes(self.device_memory)
            )
        } else {
            format!("{{{}}}", parts.join(", "))
        }
    }
}

/// Instance availabilities as work needing `device_memory` bytes per device sees them:
/// instances with less free device memory than that count as fully used (availability 0), the
/// others keep theirs. Every per-instance rule of this module (Ray's `TryAllocate`, the
/// topology-aware allocator, [`domain_rank`]) then applies unchanged to the masked
/// availabilities; what they take is taken from the real ones. Writes into `out`.
pub fn mask_by_memory(avail: &[i64], mem_free: &[u64], device_memory: u64, out: &mut Vec<i64>) {
    out.clear();
    out.extend(avail.iter().enumerate().map(|(i, &a)| {
        if mem_free.get(i).copied().unwrap_or(u64::MAX) >= device_memory {
            a
        } else {
            0
        }
    }));
}

/// Whether `demand` fits into the per-instance availabilities `avail` under Ray's
/// `NodeResourceInstanceSet::TryAllocate(ResourceID, FixedPoint)`
/// (`src/ray/common/scheduling/resource_instance_set.cc`), without changing anything.
///
/// * one instance: `available[0] >= demand`;
/// * otherwise the whole part takes instances that are entirely free (== 1.0), in index order,
///   and the fractional remainder needs one more instance with at least that much left.
pub fn instances_fit(avail: &[i64], demand: i64) -> bool {
    if demand <= 0 {
        return true;
    }
    if avail.is_empty() {
        return false;
    }
    if avail.len() == 1 {
        return avail[0] >= demand;
    }
    let whole = demand / SCALE;
    let frac = demand % SCALE;
    let full = avail.iter().filter(|&&a| a == SCALE).count() as i64;
    if full < whole {
        return false;
    }
    if frac == 0 || full > whole {
        return true;
    }
    // All full instances go to the whole part; the remainder needs a partly used one.
    avail.iter().any(|&a| a != SCALE && a >= frac)
}

/// [`instances_fit`] on `n` entirely free instances (an empty node).
pub fn instances_fit_full(n: usize, demand: i64) -> bool {
    if demand <= 0 {
        return true;
    }
    if n == 0 {
        return false;
    }
    if n == 1 {
        return SCALE >= demand;
    }
    let whole = demand / SCALE;
    let frac = demand % SCALE;
    (whole as usize) < n || (frac == 0 && whole as usize == n)
}

/// Ray's `NodeResourceInstanceSet::TryAllocate(ResourceID, FixedPoint)`
/// (`resource_instance_set.cc`): a demand ≥ 1 takes whole free instances in index order; the
/// fractional remainder goes to the best-fit instance (smallest availability that still holds
/// it; ties to the lowest index). On success `avail` is reduced and `out` (same length) holds
/// what each instance gave; on failure nothing changes.
pub fn try_allocate_ray(avail: &mut [i64], demand: i64, out: &mut [i64]) -> bool {
    debug_assert_eq!(avail.len(), out.len());
    if !instances_fit(avail, demand) {
        return false;
    }
    out.iter_mut().for_each(|o| *o = 0);
    if demand <= 0 {
        return true;
    }
    if avail.len() == 1 {
        avail[0] -= demand;
        out[0] = demand;
        return true;
    }
    let mut remaining = demand;
    if remaining >= SCALE {
        for i in 0..avail.len() {
            if avail[i] == SCALE {
                out[i] = SCALE;
                avail[i] = 0;
                remaining -= SCALE;
            }
            if remaining < SCALE {
                break;
            }
        }
    }
    if remaining > 0 {
        best_fit(avail, remaining, out, None);
    }
    true
}

/// Put `frac` (< 1.0) on the best-fit instance; with `within`, prefer instances for which it
/// returns true (used by the topology-aware allocator), falling back to any.
fn best_fit(avail: &mut [i64], frac: i64, out: &mut [i64], within: Option<&dyn Fn(usize) -> bool>) {
    let pick = |restrict: bool| -> Option<usize> {
        let mut best: Option<(usize, i64)> = None;
        for (i, &a) in avail.iter().enumerate() {
            if restrict && !within.is_some_and(|w| w(i)) {
                continue;
            }
            if a >= frac && best.is_none_or(|(_, left)| a - frac < left) {
                best = Some((i, a - frac));
            }
        }
        best.map(|b| b.0)
    };
    let i = if within.is_some() {
        pick(true).or_else(|| pick(false))
    } else {
        pick(false)
    };
    if let Some(i) = i {
        avail[i] -= frac;
        out[i] += frac;
    }
}

/// Where one device instance sits inside its node.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DeviceLoc {
    pub numa: u32,
    /// Leaf PCIe switch, if the node type declares one for this device.
    pub switch: Option<usize>,
    /// Scale-up link domain (one NVLink/NVSwitch/ICI group); devices declared `link none` each
    /// form their own domain.
    pub domain: usize,
}

/// Group keys, from the tightest to the loosest: same PCIe switch, same NUMA domain, same link
/// domain. Devices without a switch never share a switch group.
fn group_key(loc: &DeviceLoc, level: usize, i: usize) -> usize {
    match level {
        0 => loc.switch.map(|s| s * 2).unwrap_or(i * 2 + 1),
        1 => loc.numa as usize,
        _ => loc.domain,
    }
}

/// How tightly a demand's whole devices can be placed on this node right now:
/// 0 = all under one PCIe switch, 1 = one NUMA domain, 2 = one link (NVLink/NVSwitch) domain,
/// 3 = must span domains, `None` = does not fit. Fractional demands (< 1 device) rank 0.
pub fn domain_rank(avail: &[i64], locs: &[DeviceLoc], demand: i64) -> Option<u8> {
    if !instances_fit(avail, demand) {
        return None;
    }
    let whole = (demand / SCALE) as usize;
    if whole <= 1 {
        return Some(0);
    }
    for level in 0..3 {
        if best_group(avail, locs, whole, level).is_some() {
            return Some(level as u8);
        }
    }
    Some(3)
}

fn loc_of(locs: &[DeviceLoc], j: usize) -> DeviceLoc {
    locs.get(j).copied().unwrap_or(DeviceLoc {
        numa: 0,
        switch: None,
        domain: usize::MAX - j,
    })
}

/// Free (entirely unused) instances per group key at `level`, in order of first appearance:
/// `(key, free, first index)`.
fn free_groups(avail: &[i64], locs: &[DeviceLoc], level: usize) -> Vec<(usize, usize, usize)> {
    let mut groups: Vec<(usize, usize, usize)> = Vec::new();
    for (i, &a) in avail.iter().enumerate() {
        if a != SCALE {
            continue;
        }
        let key = group_key(&loc_of(locs, i), level, i);
        match groups.iter_mut().find(|g| g.0 == key) {
            Some(g) => g.1 += 1,
            None => groups.push((key, 1, i)),
        }
    }
    groups
}

/// The group (key) at `level` with at least `whole` entirely free instances and the fewest
/// such (best fit); ties to the smallest key.
fn best_group(avail: &[i64], locs: &[DeviceLoc], whole: usize, level: usize) -> Option<usize> {
    free_groups(avail, locs, level)
        .into_iter()
        .filter(|g| g.1 >= whole)
        .min_by_key(|g| (g.1, g.0))
        .map(|g| g.0)
}

/// Topology-aware allocation (Orrery's policy, not Ray's): whole devices are taken from the
/// tightest group that holds them all (one PCIe switch, else one NUMA domain, else one link
/// domain), choosing the group with the fewest free devices that suffices (best fit, so larger
/// groups stay whole); if no group suffices, from switch groups with the most free devices
/// first, so the allocation spans as few switches as possible. The fractional remainder goes
/// to the best-fit instance, preferably inside the chosen group. Same contract as
/// [`try_allocate_ray`].
pub fn try_allocate_topo(
    avail: &mut [i64],
    locs: &[DeviceLoc],
    demand: i64,
    out: &mut [i64],
) -> bool {
    if !instances_fit(avail, demand) {
        return false;
    }
    let whole = (demand / SCALE) as usize;
    let frac = demand % SCALE;
    if whole == 0 || avail.len() == 1 {
        return try_allocate_ray(avail, demand, out);
    }
    out.iter_mut().for_each(|o| *o = 0);
    let loc = |j: usize| loc_of(locs, j);
    let mut chosen: Option<(usize, usize)> = None; // (level, key)
    for level in 0..3 {
        if let Some(k) = best_group(avail, locs, whole, level) {
            chosen = Some((level, k));
            break;
        }
    }
    let mut taken = 0usize;
    if let Some((level, key)) = chosen {
        for j in 0..avail.len() {
            if taken == whole {
                break;
            }
            if avail[j] == SCALE && group_key(&loc(j), level, j) == key {
                avail[j] = 0;
                out[j] = SCALE;
                taken += 1;
            }
        }
    } else {
        // Span switches: biggest free switch groups first (ties: lowest first index).
        let mut groups = free_groups(avail, locs, 0);
        groups.sort_by_key(|g| (std::cmp::Reverse(g.1), g.2));
        for (key, _, _) in groups {
            for j in 0..avail.len() {
                if taken == whole {
                    break;
                }
                if avail[j] == SCALE && group_key(&loc(j), 0, j) == key {
                    avail[j] = 0;
                    out[j] = SCALE;
                    taken += 1;
                }
            }
        }
    }
    debug_assert_eq!(taken, whole);
    if frac > 0 {
        let sw: Vec<Option<usize>> = out
            .iter()
            .enumerate()
            .filter(|(_, o)| **o > 0)
            .map(|(j, _)| loc(j).switch)
            .collect();
        let within = |i: usize| sw.contains(&loc(i).switch) && loc(i).switch.is_some();
        best_fit(avail, frac, out, Some(&within));
    }
    true
}

/// After an allocation, how broken up the node's free devices are: the number of PCIe switch
/// groups that are partly free (some devices free, some in use). Lower is better.
pub fn fragmentation(avail: &[i64], locs: &[DeviceLoc]) -> usize {
    let mut groups: Vec<(usize, usize, usize)> = Vec::new(); // (switch, free, members)
    for (i, &a) in avail.iter().enumerate() {
        let Some(s) = loc_of(locs, i).switch else {
            continue;
        };
        let free = usize::from(a == SCALE);
        match groups.iter_mut().find(|g| g.0 == s) {
            Some(g) => {
                g.1 += free;
                g.2 += 1;
            }
            None => groups.push((s, free, 1)),
        }
    }
    groups.iter().filter(|g| g.1 > 0 && g.1 < g.2).count()
}
/// The (node, device) of every device instance `allocs` hold, the resources `is_device`
/// names counting as devices: node-major in the order the allocations first name each node,
/// devices ascending within a node (each once). The rank order of a collective over a
/// placement group's allocations (the simulation's jobs, `orrery collectives`).
pub fn device_ranks<'a>(
    allocs: impl IntoIterator<Item = &'a super::Allocation>,
    is_device: impl Fn(usize) -> bool,
) -> Vec<(usize, usize)> {
    let mut order: Vec<usize> = Vec::new();
    let mut per: BTreeMap<usize, Vec<usize>> = BTreeMap::new();
    for a in allocs {
        if !order.contains(&a.node) {
            order.push(a.node);
        }
        for (rid, amounts) in &a.instances {
            if is_device(*rid) {
                let held = amounts.iter().enumerate().filter(|(_, x)| **x > 0);
                per.entry(a.node).or_default().extend(held.map(|(d, _)| d));
            }
        }
    }
    let mut ranks = Vec::new();
    for n in order {
        let mut devs = per.remove(&n).unwrap_or_default();
        devs.sort_unstable();
        devs.dedup();
        ranks.extend(devs.into_iter().map(|d| (n, d)));
    }
    ranks
}
