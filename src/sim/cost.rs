//! What the cluster costs over a run's window ([`ClusterCost`]): its nodes' price and power
//! (`Spec::node_price`, `Spec::node_power`: a node's own figure, else its devices') times
//! the window.

use super::metrics::ClusterCost;
use crate::scenario::Spec;
use crate::scenario::hardware::NodeType;

/// The cost of `nodes` (every node of the cluster, by type) over `horizon_s` seconds.
pub(super) fn cluster(spec: &Spec, nodes: &[&NodeType], horizon_s: f64) -> ClusterCost {
    if nodes.is_empty() {
        return ClusterCost::default();
    }
    let price: Option<f64> = nodes.iter().map(|nt| spec.node_price(nt)).sum();
    let power: Option<f64> = nodes.iter().map(|nt| spec.node_power(nt)).sum();
    let hours = horizon_s / 3600.0;
    ClusterCost {
        price_usd_per_h: price,
        cost_usd: price.map(|p| p * hours),
        power_w: power,
        energy_kwh: power.map(|w| w / 1000.0 * hours),
    }
}
