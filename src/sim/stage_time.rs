//! What one microbatch costs on a training job's slowest stage: its kernels at the job's
//! rates (fp8's linear GEMMs at fp8, the rest at bf16), plus the communication its overlaps
//! leave exposed ([`Exposed`], which [`super::model_steps`] prices on the run's network).
//!
//! Architecture invariant: arithmetic over kernels and seconds only; nothing here knows the
//! network or the engine.

use crate::compute::kernels::KernelRates;
use crate::model::StepWork;
use crate::model::ops::Kernel;
use crate::scenario::Spec;

/// How a job's kernels are priced: at the training dtype's rates, or — with a narrow
/// precision (fp8) — the linear GEMMs at its rates and every other kernel at bf16's
/// ([`crate::model::training_widths`]).
pub struct Rates {
    pub base: KernelRates,
    pub narrow: Option<KernelRates>,
}

impl Rates {
    /// The rates of `dtype` on `accelerator`, from the scenario's profiles.
    pub fn of(spec: &Spec, accelerator: &str, dtype: &str) -> Result<Rates, String> {
        let rates = |d: &str| {
            crate::compute::kernels::kernel_rates(spec, accelerator, d)
                .ok_or_else(|| format!("`{accelerator}` has no {d} peak"))
        };
        Ok(match crate::model::training_widths(dtype).1 {
            Some(_) => Rates {
                base: rates("bf16")?,
                narrow: Some(rates(dtype)?),
            },
            None => Rates {
                base: rates(dtype)?,
                narrow: None,
            },
        })
    }

    /// Seconds of one kernel.
    pub fn secs(&self, k: &Kernel) -> f64 {
        let r = match &self.narrow {
            Some(n) if k.narrow => n,
            _ => &self.base,
        };
        r.secs(k.engine, k.flop, k.bytes)
    }
}

/// Seconds of `ks` one after another.
fn kernels_secs(rates: &Rates, ks: &[Kernel]) -> f64 {
    ks.iter().map(|k| rates.secs(k)).sum()
}

/// Communication a layer leaves exposed per microbatch pass, on top of its kernels:
/// `forward` for each (recomputed) forward, `backward` for its backward.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Exposed {
    pub forward: f64,
    pub backward: f64,
}

/// A layer's exposed communication per microbatch: its forward's, a recomputed forward's
/// (full recomputation reruns the forward's collectives) and its backward's.
fn exposed_layer(work: &StepWork, e: Exposed) -> (f64, f64) {
    let full =
        !work.layer.recompute.is_empty() && work.layer.recompute.len() == work.layer.forward.len();
    let fw = e.forward * if full { 2.0 } else { 1.0 };
    (
        fw + e.backward,
        e.backward + if full { e.forward } else { 0.0 },
    )
}

/// Seconds of the last microbatch's backward on the slowest stage: its layers' backward and
/// recomputed kernels (and their exposed communication) and, on the last stage, the output
/// layer's backward (gradients appear as it runs).
pub fn backward_secs(rates: &Rates, work: &StepWork, e: Exposed) -> f64 {
    let sum = |ks: &[Kernel]| kernels_secs(rates, ks);
    let l = &work.layer;
    let per_layer = sum(&l.backward) + sum(&l.recompute) + exposed_layer(work, e).1;
    // The output layer's kernels are its forward, then its two gradients.
    let out_bw = work.output.get(1..).map_or(0.0, sum);
    let inner = work.first_stage_layers.max(work.layers_per_stage);
    (f64::from(inner) * per_layer).max(f64::from(work.last_stage_layers) * per_layer + out_bw)
}

/// Seconds of one microbatch on the slowest stage — the first, a middle one or the last (the
/// one with the output layer; with one stage, that one): its layers' forward, backward and
/// recomputed kernels and exposed communication, and on the last stage the output layer's —
/// and of the iteration's optimizer step, each kernel priced by `rates`.
pub fn stage_secs(rates: &Rates, work: &StepWork, e: Exposed) -> (f64, f64) {
    let sum = |ks: &[Kernel]| kernels_secs(rates, ks);
    let l = &work.layer;
    let layer = sum(&l.forward) + sum(&l.backward) + sum(&l.recompute) + exposed_layer(work, e).0;
    let inner = work.first_stage_layers.max(work.layers_per_stage);
    let stage = (f64::from(inner) * layer)
        .max(f64::from(work.last_stage_layers) * layer + sum(&work.output));
    (stage, sum(std::slice::from_ref(&work.optimizer)))
}
