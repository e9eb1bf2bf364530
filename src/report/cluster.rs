//! The line of `orrery run`'s summary with what the cluster costs over the window
//! (`RunMetrics::cluster`).

use crate::sim::metrics::ClusterCost;

/// `cluster $P per hour · $C over the window · W kW · E kWh over the window (TDP × time, an
/// upper bound)`, a figure the cluster lacks said to be unknown; empty without a cluster.
pub fn cluster_line(c: &ClusterCost) -> String {
    if c == &ClusterCost::default() {
        return String::new();
    }
    let price = match (c.price_usd_per_h, c.cost_usd) {
        (Some(p), Some(x)) => format!("${p:.2} per hour · ${x:.2} over the window"),
        _ => "price unknown (a node or device has no price)".to_string(),
    };
    let power = match (c.power_w, c.energy_kwh) {
        (Some(w), Some(e)) => format!(
            "{} kW · {} kWh over the window (TDP × time, an upper bound)",
            crate::units::sig3(w / 1000.0),
            crate::units::sig3(e)
        ),
        _ => "power unknown (a node or device has no power figure)".to_string(),
    };
    format!("cluster {price} · {power}\n")
}
