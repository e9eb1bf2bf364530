//! CPU utilization as a run's files and table: `cpu_utilization.csv` (busy and allocated CPUs
//! per node and per node type at each change) and the "CPU utilization per node type" table
//! `orrery run` prints.

use crate::csv::field as csv_field;
use crate::sim::metrics::RunMetrics;
use crate::table::Table;
use std::fmt::Write as _;

/// `cpu_utilization.csv`: `head` (the run's header columns) then
/// `scope,name,cpus,time_s,bin_s,busy_cpus,allocated_cpus`, scope `node` (a node by name) or
/// `node_type`; one row at each change of either level (`bin_s` 0), or, for a key with more
/// than `sim::utilization::EXACT` changes, one per bin of `bin_s` seconds holding the levels'
/// means over it; `pre` the header's values.
pub fn csv(head: &str, pre: &str, m: &RunMetrics) -> String {
    let mut out = format!("{head},scope,name,cpus,time_s,bin_s,busy_cpus,allocated_cpus\n");
    for (scope, map) in [
        ("node", &m.cpu_utilization),
        ("node_type", &m.cpu_utilization_by_node_type),
    ] {
        for (name, u) in map {
            for (t, busy, held) in super::steps(&u.busy_series, &u.allocated_series) {
                let _ = writeln!(
                    out,
                    "{pre},{scope},{},{},{t},{},{busy},{held}",
                    csv_field(name),
                    u.cpus,
                    u.series_resolution_s
                );
            }
        }
    }
    out
}

/// The table of CPU utilization per node type (its nodes' CPUs, busy, allocated), or nothing
/// when no work held a CPU in the run.
pub fn table(m: &RunMetrics) -> String {
    let held = m
        .cpu_utilization_by_node_type
        .values()
        .any(|u| u.allocated_fraction > 0.0 || u.busy_fraction > 0.0);
    if !held {
        return String::new();
    }
    let mut t = Table::new(["CPU utilization per node type", "CPUs", "busy", "allocated"]);
    for (c, u) in &m.cpu_utilization_by_node_type {
        t.row([
            c.clone(),
            crate::plot::fmt_num(u.cpus),
            format!("{:.1}%", u.busy_fraction * 100.0),
            format!("{:.1}%", u.allocated_fraction * 100.0),
        ]);
    }
    format!("\n{t}")
}
