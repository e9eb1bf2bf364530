//! The "CPU utilization per node type" table `orrery run` prints (`cpu_utilization.csv` is
//! one of `tables.rs`'s rows).

use crate::sim::metrics::RunMetrics;
use crate::table::Table;

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
