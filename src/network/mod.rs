//! Data movement over a link graph (issue 4 in progress): flow-level max-min bandwidth
//! sharing. The link graph built from the Spec, routing and transports come next.

pub mod flows;

pub use flows::{FlowId, FlowNet, LinkId};
