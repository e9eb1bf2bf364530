//! The CUDA backend's cuBLAS GEMM sweep (feature `cuda`): square n³ GEMMs, bf16 and fp16 with
//! fp32 accumulation, for n = 256, 512, … 8192 (4096 with `--quick`), on seeded random
//! operands, timed with CUDA events on the calibration stream. Each size gives one point of
//! `efficiency_by_size` (size = the FLOP of one GEMM, 2n³); the largest size is the headline
//! `efficiency`.
//!
//! Time: per size a warm-up call and a timed one that sizes the repetitions, then `reps`
//! repetitions of back-to-back calls lasting at least `min_rep_s` each (at most `min_rep_s`
//! plus one call). At ~800 TFLOPS bf16 (the
//! measured H200 figures in calibration/h200_datasheet.toml: 770–800 of 989 TFLOPS at 8192³)
//! one 8192³ GEMM (1.1 TFLOP) takes ~1.4 ms and one 4096³ ~0.17 ms, so the full plan (15
//! repetitions of ≥ 2 ms) spends ≤ 15 × 2.2 ms ≈ 33 ms at each size up to 4096 and
//! ≈ 15 × 2 × 1.4 ms ≈ 41 ms at 8192: ≈ 0.2 s per dtype on the device, whatever small GEMMs
//! achieve. The host's share is larger: the two 8192² operands per dtype (generated once and
//! used as prefixes by the smaller sizes) took 0.64 s with ChaCha8 on one core of the
//! development VM, plus their upload. So the sweep adds a few seconds to a calibration bounded
//! by run-gpu.sh's 240 s, and no size needs fewer repetitions.
//!
//! Times are of back-to-back calls on one stream, so a small GEMM's figure includes its
//! launch cost; the kernel model (`compute::kernels`) adds the profile's launch overhead on
//! top, so at the smallest sizes that cost is counted twice.

use super::cuda::{Timer, err};
use super::cuda_kernels::Reps;
use super::{ComputeMeasure, Options};
use cudarc::cublas::{CudaBlas, Gemm, GemmConfig, sys as blas_sys};
use cudarc::driver::CudaStream;
use std::sync::Arc;

/// The square sizes n swept, increasing.
pub(super) fn sizes(quick: bool) -> &'static [usize] {
    if quick {
        &[256, 512, 1024, 2048, 4096]
    } else {
        &[256, 512, 1024, 2048, 4096, 8192]
    }
}

/// Progress-bar steps of [`measure`]: one per dtype and size.
pub(super) fn steps(quick: bool) -> u64 {
    2 * sizes(quick).len() as u64
}

/// The bf16 and fp16 sweeps, pushed onto `compute` (a dtype that fails at any size is a note
/// instead, its other sizes dropped). `peak` gives the datasheet peak of a dtype, if any.
/// Ticks [`steps`] times whatever fails.
pub(super) fn measure(
    o: &Options,
    stream: &Arc<CudaStream>,
    timer: &Timer,
    plan: &Reps,
    peak: &dyn Fn(&str) -> Option<f64>,
    compute: &mut Vec<ComputeMeasure>,
    notes: &mut Vec<String>,
) {
    let ns = sizes(o.quick);
    let blas = match CudaBlas::new(stream.clone()) {
        Ok(b) => b,
        Err(e) => {
            notes.push(format!("cuBLAS not available ({e:?}): no GEMM figures"));
            for _ in 0..steps(o.quick) {
                o.tick("GEMM skipped");
            }
            return;
        }
    };
    for dtype in ["bf16", "fp16"] {
        let mut ticked = 0;
        let r = match dtype {
            "bf16" => sweep(
                o,
                dtype,
                stream,
                timer,
                &blas,
                plan,
                &mut ticked,
                half::bf16::ONE,
                half::bf16::ZERO,
                half::bf16::from_f32,
            ),
            _ => sweep(
                o,
                dtype,
                stream,
                timer,
                &blas,
                plan,
                &mut ticked,
                half::f16::ONE,
                half::f16::ZERO,
                half::f16::from_f32,
            ),
        };
        for _ in ticked..ns.len() {
            o.tick(&format!("GEMM {dtype} skipped"));
        }
        let points = match r {
            Ok(p) => p,
            Err(e) => {
                notes.push(format!("{dtype} GEMM not measured: {e}"));
                continue;
            }
        };
        let by_size: Vec<(f64, Vec<f64>)> = points
            .iter()
            .map(|(g, secs)| {
                let flop = 2.0 * (*g as f64).powi(3);
                (flop, secs.iter().map(|t| flop / t).collect())
            })
            .collect();
        let (g, _) = points[points.len() - 1];
        compute.push(ComputeMeasure {
            dtype: dtype.into(),
            reps: by_size[by_size.len() - 1].1.clone(),
            peak: peak(dtype),
            source: format!(
                "cuBLAS GEMM n³ {dtype} (fp32 accumulate) on seeded random operands, n = {}; headline {g}³; per size events around back-to-back GEMMs of at least {} ms, median of {}",
                ns.iter().map(ToString::to_string).collect::<Vec<_>>().join(", "),
                plan.min_rep_s * 1e3,
                plan.reps
            ),
            by_size,
        });
    }
}

/// Every size of one dtype, increasing: (n, seconds per GEMM of each repetition). Operands are
/// made once at the largest size; size n uses the first n² elements of each (a column-major
/// n × n matrix with leading dimension n).
#[allow(clippy::too_many_arguments)]
fn sweep<T>(
    o: &Options,
    dtype: &str,
    stream: &Arc<CudaStream>,
    timer: &Timer,
    blas: &CudaBlas,
    plan: &Reps,
    ticked: &mut usize,
    one: T,
    zero: T,
    from_f32: fn(f32) -> T,
) -> Result<Vec<(usize, Vec<f64>)>, String>
where
    T: cudarc::driver::DeviceRepr + cudarc::driver::ValidAsZeroBits + Copy,
    CudaBlas: Gemm<T>,
{
    let ns = sizes(o.quick);
    let gmax = ns[ns.len() - 1];
    // Inputs uniform in [−1, 1) from a fixed seed: tensor cores on all-zero operands toggle
    // no bits and draw less power, so zeros measure optimistic clocks (issue 13).
    let a = stream
        .clone_htod(&random_matrix(gmax, 1, from_f32))
        .map_err(err("device alloc"))?;
    let b = stream
        .clone_htod(&random_matrix(gmax, 2, from_f32))
        .map_err(err("device alloc"))?;
    let mut c = stream
        .alloc_zeros::<T>(gmax * gmax)
        .map_err(err("device alloc"))?;
    let mut out = Vec::with_capacity(ns.len());
    for &g in ns {
        let cfg = gemm_cfg(g, one, zero);
        let (av, bv) = (a.slice(..g * g), b.slice(..g * g));
        let mut cv = c.slice_mut(..g * g);
        let mut call = || {
            // SAFETY: every view holds g × g elements and the leading dimensions are g.
            unsafe { blas.gemm(cfg, &av, &bv, &mut cv) }.map_err(err("cuBLAS GEMM"))
        };
        // A first call of a new shape may pay one-time costs (cuBLAS choosing and loading a
        // kernel); it is not the one that sizes the repetitions.
        timer.time(1, &mut call)?;
        let secs = timer.reps(plan.reps, plan.min_rep_s, &mut call)?;
        out.push((g, secs));
        o.tick(&format!("GEMM {dtype} {g}³"));
        *ticked += 1;
    }
    Ok(out)
}

/// A `g` × `g` matrix of values uniform in [−1, 1), from `seed` (deterministic).
fn random_matrix<T>(g: usize, seed: u64, from_f32: fn(f32) -> T) -> Vec<T> {
    use rand::{RngExt, SeedableRng};
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
    (0..g * g)
        .map(|_| from_f32(rng.random_range(-1.0f32..1.0)))
        .collect()
}

/// Square column-major `g`³ GEMM, no transposes.
fn gemm_cfg<T>(g: usize, one: T, zero: T) -> GemmConfig<T> {
    GemmConfig {
        transa: blas_sys::cublasOperation_t::CUBLAS_OP_N,
        transb: blas_sys::cublasOperation_t::CUBLAS_OP_N,
        m: g as i32,
        n: g as i32,
        k: g as i32,
        alpha: one,
        lda: g as i32,
        ldb: g as i32,
        beta: zero,
        ldc: g as i32,
    }
}
