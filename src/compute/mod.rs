//! Compute models: how long work takes on an accelerator. [`roofline`](mod@roofline) is the model the
//! simulation uses; its parameters come from the accelerator's calibration profile when the
//! scenario names one, and from stated datasheet defaults otherwise, and every model says
//! which ([`ModelSource`]), so that results can too.

pub mod iteration;
pub mod kernels;
pub mod roofline;

pub use iteration::iteration_secs;
pub use roofline::{
    DEFAULT_COMPUTE_EFFICIENCY, DEFAULT_LAUNCH_OVERHEAD, DEFAULT_MEMORY_EFFICIENCY, ModelSource,
    Roofline, Work, model_sources, peak, roofline, work_of,
};
