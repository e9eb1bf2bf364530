//! The CUDA backend's kernel measurements (feature `cuda`), on the calibration stream of
//! `cuda:N` with [`super::cuda`]'s event timer: launch latency (1,000 back-to-back empty
//! kernels), a memory-bound triad over array sizes (`memory.efficiency_by_size`; the largest
//! is the headline), compute-bound multiply–add kernels (fp32, fp64), all compiled with NVRTC,
//! and the cuBLAS GEMM sweep ([`super::cuda_gemm`]).

use super::cuda::{Timer, err};
use super::{ComputeMeasure, LaunchMeasure, MemoryMeasure, Options};
use crate::scenario::hardware::Accelerator;
use cudarc::driver::{
    CudaContext, CudaFunction, CudaStream, DeviceRepr, LaunchConfig, PushKernelArg, ValidAsZeroBits,
};
use std::sync::Arc;

/// How every kernel is timed: repetitions, each of back-to-back calls lasting at least
/// `min_rep_s` (where a kernel is timed that way).
pub(super) struct Reps {
    pub reps: usize,
    pub min_rep_s: f64,
}

/// What the kernels measured.
pub(super) struct Kernels {
    pub launch: LaunchMeasure,
    pub memory: MemoryMeasure,
    pub compute: Vec<ComputeMeasure>,
}

const KERNELS: &str = r#"
extern "C" __global__ void empty() {}

extern "C" __global__ void triad(float* a, const float* b, const float* c, float s,
                                 unsigned long long n) {
    unsigned long long stride = (unsigned long long)gridDim.x * blockDim.x;
    for (unsigned long long i = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x;
         i < n; i += stride)
        a[i] = b[i] + s * c[i];
}

#define FMA_KERNEL(NAME, T, FMA)                                                  \
extern "C" __global__ void NAME(T* out, int iters, T a, T b) {                    \
    T x0 = threadIdx.x * (T)1e-3, x1 = x0 + 1, x2 = x0 + 2, x3 = x0 + 3;          \
    T x4 = x0 + 4, x5 = x0 + 5, x6 = x0 + 6, x7 = x0 + 7;                         \
    for (int i = 0; i < iters; ++i) {                                             \
        x0 = FMA(x0, a, b); x1 = FMA(x1, a, b); x2 = FMA(x2, a, b);               \
        x3 = FMA(x3, a, b); x4 = FMA(x4, a, b); x5 = FMA(x5, a, b);               \
        x6 = FMA(x6, a, b); x7 = FMA(x7, a, b);                                   \
    }                                                                             \
    out[blockIdx.x * blockDim.x + threadIdx.x] = x0 + x1 + x2 + x3 + x4 + x5 + x6 + x7; \
}
FMA_KERNEL(fma32, float, fmaf)
FMA_KERNEL(fma64, double, fma)
"#;

/// f32 elements of each triad array at the largest size.
fn triad_elems(quick: bool) -> usize {
    if quick { 16 << 20 } else { 256 << 20 }
}

/// The triad's array lengths (f32 elements), increasing: 2^12 × 4^k up to [`triad_elems`],
/// so one kernel moves 48 KiB … 3 GiB (12 bytes an element; 48 KiB … 192 MiB quick).
fn triad_sizes(quick: bool) -> Vec<usize> {
    let max = triad_elems(quick);
    std::iter::successors(Some(1usize << 12), |n| Some(n * 4))
        .take_while(|n| *n <= max)
        .collect()
}

/// Progress-bar steps of [`measure`]: launch latency, each triad size, the two FMA kernels and
/// the GEMM sweep's.
pub(super) fn steps(quick: bool) -> u64 {
    1 + triad_sizes(quick).len() as u64 + 2 + super::cuda_gemm::steps(quick)
}

/// Every kernel measurement; `sms` sizes the grids, `cat` (the catalog accelerator) gives the
/// peaks. A GEMM dtype that cannot be measured is a note, not an error.
#[allow(clippy::too_many_arguments, clippy::too_many_lines)]
pub(super) fn measure(
    o: &Options,
    ctx: &Arc<CudaContext>,
    stream: &Arc<CudaStream>,
    timer: &Timer,
    r: &Reps,
    sms: u32,
    cat: Option<&Accelerator>,
    notes: &mut Vec<String>,
) -> Result<Kernels, String> {
    let ptx =
        cudarc::nvrtc::compile_ptx(KERNELS).map_err(err("NVRTC cannot compile the kernels"))?;
    let module = ctx
        .load_module(ptx)
        .map_err(err("cannot load the kernels"))?;
    let f = |name: &'static str| {
        module
            .load_function(name)
            .map_err(err("cannot load a kernel"))
    };
    let (empty, triad, fma32, fma64) = (f("empty")?, f("triad")?, f("fma32")?, f("fma64")?);

    let launch = || {
        let mut l = stream.launch_builder(&empty);
        // SAFETY: the kernel takes no arguments.
        unsafe { l.launch(LaunchConfig::for_num_elems(1)) }
            .map(|_| ())
            .map_err(err("kernel launch"))
    };
    timer.time(100, launch)?; // warm-up
    let launch_reps = (0..r.reps)
        .map(|_| timer.time(1000, launch))
        .collect::<Result<Vec<f64>, String>>()?;
    o.tick("launch latency");

    let elems = triad_elems(o.quick);
    let mut a = stream
        .alloc_zeros::<f32>(elems)
        .map_err(err("device alloc"))?;
    let b = stream
        .alloc_zeros::<f32>(elems)
        .map_err(err("device alloc"))?;
    let c = stream
        .alloc_zeros::<f32>(elems)
        .map_err(err("device alloc"))?;
    // The triad at each size: the first n elements of the arrays, as many 256-thread blocks
    // as the elements need up to 8 per SM (grid-stride beyond). Back-to-back kernels, so a
    // small one's figure includes its launch cost.
    let s = 3.0f32;
    let mut by_size = Vec::new();
    for nelem in triad_sizes(o.quick) {
        let nn = nelem as u64;
        let grid = LaunchConfig {
            grid_dim: ((sms * 8).min(nelem.div_ceil(256) as u32), 1, 1),
            block_dim: (256, 1, 1),
            shared_mem_bytes: 0,
        };
        let secs = timer.reps(r.reps, r.min_rep_s, || {
            let mut l = stream.launch_builder(&triad);
            l.arg(&mut a).arg(&b).arg(&c).arg(&s).arg(&nn);
            // SAFETY: argument types and order match the kernel; every array holds `elems`
            // ≥ `nn` floats.
            unsafe { l.launch(grid) }
                .map(|_| ())
                .map_err(err("kernel launch"))
        })?;
        let bytes = 12.0 * nelem as f64;
        by_size.push((bytes, secs.iter().map(|t| bytes / t).collect::<Vec<f64>>()));
        o.tick(&format!("triad {}", super::human_bytes(12 * nn)));
    }
    drop((a, b, c));
    let memory = MemoryMeasure {
        reps: by_size.last().map(|(_, x)| x.clone()).unwrap_or_default(),
        peak: cat.map(|a| a.memory_bw.0),
        source: format!(
            "triad a = b + s·c (NVRTC) on f32 arrays of 4096 × 4^k elements, headline 3 × {} MiB; grid-stride, up to {} blocks × 256; events around back-to-back kernels, median of {}",
            (elems * 4) >> 20,
            sms * 8,
            r.reps
        ),
        by_size,
    };

    let mut compute = Vec::new();
    let threads = (sms * 16 * 256) as usize;
    let iters: i32 = if o.quick { 4096 } else { 65536 };
    for (dtype, func) in [("fp32", &fma32), ("fp64", &fma64)] {
        let cfg = LaunchConfig {
            grid_dim: (sms * 16, 1, 1),
            block_dim: (256, 1, 1),
            shared_mem_bytes: 0,
        };
        let secs = if dtype == "fp32" {
            fma_reps(
                stream, timer, func, cfg, threads, iters, 0.9999f32, 1e-4f32, r.reps,
            )?
        } else {
            fma_reps(
                stream, timer, func, cfg, threads, iters, 0.9999f64, 1e-4f64, r.reps,
            )?
        };
        let flop = 2.0 * 8.0 * f64::from(iters) * threads as f64;
        compute.push(ComputeMeasure {
            dtype: dtype.into(),
            reps: secs.iter().map(|t| flop / t).collect(),
            peak: cat.and_then(|a| a.flops.get(dtype)).map(|f| f.0),
            source: format!(
                "8 independent FMA chains per thread (NVRTC), {threads} threads × {iters} iterations, events, median of {}",
                r.reps
            ),
            by_size: Vec::new(),
        });
        o.tick(&format!("compute {dtype}"));
    }

    // cuBLAS GEMM over sizes, bf16 and fp16 (fp32 accumulate), where cuBLAS loads and
    // supports them.
    let peak = |dtype: &str| cat.and_then(|a| a.flops.get(dtype)).map(|f| f.0);
    super::cuda_gemm::measure(o, stream, timer, r, &peak, &mut compute, notes);

    Ok(Kernels {
        launch: LaunchMeasure {
            reps: launch_reps,
            source: format!(
                "empty kernel: events around 1,000 back-to-back launches on one stream, median of {}",
                r.reps
            ),
        },
        memory,
        compute,
    })
}

/// Times one `FMA_KERNEL` of element type `T` (`x ← fma(x, a, b)` chains) on `threads`
/// threads, `reps` repetitions.
#[allow(clippy::too_many_arguments)] // the kernel's launch and its four arguments
fn fma_reps<T: DeviceRepr + ValidAsZeroBits>(
    stream: &Arc<CudaStream>,
    timer: &Timer,
    func: &CudaFunction,
    cfg: LaunchConfig,
    threads: usize,
    iters: i32,
    a: T,
    b: T,
    reps: usize,
) -> Result<Vec<f64>, String> {
    let mut out = stream.alloc_zeros::<T>(threads).map_err(err("alloc"))?;
    timer.reps(reps, 0.0, || {
        let mut l = stream.launch_builder(func);
        l.arg(&mut out).arg(&iters).arg(&a).arg(&b);
        // SAFETY: argument types and order match the kernel (`T* out, int iters, T a, T b`);
        // `out` has a slot per thread.
        unsafe { l.launch(cfg) }
            .map(|_| ())
            .map_err(err("kernel launch"))
    })
}
