//! The CUDA backend (feature `cuda`): cudarc with the driver, NVRTC and cuBLAS loaded at run
//! time, so building needs no CUDA toolkit. Before the first driver call, [`probe`] checks that
//! libcuda can be loaded (libloading), so a machine without a driver gets a one-line error.
//!
//! Measured on `cuda:N`, every time taken between CUDA events on one stream after a warm-up,
//! median of repetitions (nvbandwidth / nccl-tests style):
//! - inventory: name, memory, SM count, compute capability, PCI bus id, NUMA node (from
//!   /sys/bus/pci/devices/<bus id>/numa_node), the P2P matrix of every pair;
//! - H2D and D2H from pinned (page-locked, not write-combined) and pageable host memory, D2D,
//!   and P2P to the next device (peer access enabled; `p2p_no_peer` where it cannot be;
//!   issued and timed on the destination GPU's stream, see the P2P block),
//!   4 KiB … 1 GiB, with 1.5 × 2^k sizes held out of the fit; a 256 MiB copy for every
//!   ordered pair of devices (the profile's `[[p2p_matrix]]`);
//! - launch latency: events around 1,000 back-to-back empty kernels;
//! - a memory-bound triad over array sizes (`memory.efficiency_by_size`) and a compute-bound
//!   multiply–add kernel (fp32, fp64), compiled with NVRTC; cuBLAS GEMM bf16 and fp16 over
//!   sizes 256³ … 8192³ (4096³ quick) on seeded random operands ([`super::cuda_gemm`]).
//!
//! Not yet run on a GPU (no device machine has been lent to this project's sessions): the
//! P2P and GEMM code follows cudarc 0.19's documented semantics, and CI builds it
//! (`cargo check --features cuda`) without running it.
//!   Peaks are the catalog accelerator's datasheet figures when the device is in the catalog.

use super::detect::{Gpu, GpuInventory, pci_numa_node};
use super::fit::Point;
use super::{Measurement, Options, PathMeasure, PeerMeasure};
use cudarc::driver::{CudaContext, CudaStream, sys};
use std::fmt::Debug;
use std::sync::Arc;

/// Check that the CUDA driver library can be loaded, without calling into it.
pub fn probe() -> Result<(), String> {
    // SAFETY: loading libcuda runs its initialisers only; nothing is called through it here.
    let lib = unsafe { libloading::Library::new("libcuda.so.1") }.map_err(|_| {
        "CUDA driver not found (cannot load libcuda.so.1): is the NVIDIA driver installed?"
            .to_string()
    })?;
    drop(lib);
    // SAFETY: cudarc's own check that the library it loads lazily is there.
    if !unsafe { sys::is_culib_present() } {
        return Err("CUDA driver not found by cudarc (libcuda)".into());
    }
    Ok(())
}

pub(super) fn err<E: Debug>(what: &'static str) -> impl Fn(E) -> String {
    move |e| format!("{what}: {e:?}")
}

/// The NVIDIA kernel driver's version (`580.65.06`), else the CUDA driver API version.
fn driver_version() -> String {
    if let Ok(v) = std::fs::read_to_string("/sys/module/nvidia/version") {
        return v.trim().to_string();
    }
    let mut v = 0i32;
    // SAFETY: plain out-parameter call; the library was probed.
    let r = unsafe { sys::cuDriverGetVersion(&mut v) };
    if r == sys::CUresult::CUDA_SUCCESS {
        format!("CUDA {}.{}", v / 1000, v % 1000 / 10)
    } else {
        "unknown".into()
    }
}

fn attr(ctx: &CudaContext, a: sys::CUdevice_attribute) -> Option<i32> {
    ctx.attribute(a).ok()
}

fn gpu(ctx: &CudaContext) -> Result<Gpu, String> {
    use sys::CUdevice_attribute as A;
    let bus = match (
        attr(ctx, A::CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID),
        attr(ctx, A::CU_DEVICE_ATTRIBUTE_PCI_BUS_ID),
        attr(ctx, A::CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID),
    ) {
        (Some(d), Some(b), Some(v)) => Some(format!("{d:04x}:{b:02x}:{v:02x}.0")),
        _ => None,
    };
    let cc = ctx.compute_capability().ok();
    Ok(Gpu {
        name: ctx.name().map_err(err("cannot read the device name"))?,
        memory_bytes: ctx.total_mem().map_err(err("cannot read device memory"))? as u64,
        sm_count: attr(ctx, A::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT).map(|n| n as u32),
        compute_capability: cc.map(|(a, b)| (a as u32, b as u32)),
        numa_node: bus.as_deref().and_then(pci_numa_node),
        pci_bus_id: bus,
    })
}

fn contexts() -> Result<Vec<Arc<CudaContext>>, String> {
    probe()?;
    let n = CudaContext::device_count().map_err(err("cannot count CUDA devices"))?;
    if n <= 0 {
        return Err("no CUDA device found".into());
    }
    (0..n as usize)
        .map(|i| CudaContext::new(i).map_err(err("cannot open a CUDA device")))
        .collect()
}

fn can_access_peer(a: &CudaContext, b: &CudaContext) -> bool {
    let mut can = 0i32;
    // SAFETY: out-parameter call on two valid device handles.
    let r = unsafe { sys::cuDeviceCanAccessPeer(&mut can, a.cu_device(), b.cu_device()) };
    r == sys::CUresult::CUDA_SUCCESS && can != 0
}

fn p2p_attribute(
    a: &CudaContext,
    b: &CudaContext,
    what: sys::CUdevice_P2PAttribute,
) -> Option<i32> {
    let mut v = 0i32;
    // SAFETY: out-parameter call on two valid device handles.
    let r = unsafe { sys::cuDeviceGetP2PAttribute(&mut v, what, a.cu_device(), b.cu_device()) };
    (r == sys::CUresult::CUDA_SUCCESS).then_some(v)
}

/// The link from `a` to `b` as the driver lets us tell it. The CUDA driver API has no call
/// naming the link (NVML has); `cuDeviceGetP2PAttribute` reports whether native atomics work
/// over it, which NVIDIA GPUs support over NVLink and not over PCIe peer mappings (CUDA C++
/// Programming Guide, "Peer-to-Peer Memory Access" and `cudaDevP2PAttrNativeAtomicSupported`).
/// So: no peer access → `none`; peer access with native atomics → `nvlink`; without → `pcie`.
/// This inference has not yet been checked on an NVLink machine by this project.
fn link_kind(a: &CudaContext, b: &CudaContext) -> String {
    use sys::CUdevice_P2PAttribute as P;
    let access = p2p_attribute(a, b, P::CU_DEVICE_P2P_ATTRIBUTE_ACCESS_SUPPORTED);
    let atomic = p2p_attribute(a, b, P::CU_DEVICE_P2P_ATTRIBUTE_NATIVE_ATOMIC_SUPPORTED);
    match (access, atomic) {
        (Some(0), _) => "none".into(),
        (Some(_), Some(x)) if x != 0 => "nvlink".into(),
        (Some(_), Some(_)) => "pcie".into(),
        _ => String::new(),
    }
}

/// Every GPU and the P2P matrix.
pub fn inventory() -> Result<GpuInventory, String> {
    let ctxs = contexts()?;
    inventory_of(&ctxs)
}

fn inventory_of(ctxs: &[Arc<CudaContext>]) -> Result<GpuInventory, String> {
    let gpus = ctxs.iter().map(|c| gpu(c)).collect::<Result<Vec<_>, _>>()?;
    let p2p = ctxs
        .iter()
        .map(|a| {
            ctxs.iter()
                .map(|b| Arc::ptr_eq(a, b) || can_access_peer(a, b))
                .collect()
        })
        .collect();
    let links = ctxs
        .iter()
        .map(|a| {
            ctxs.iter()
                .map(|b| {
                    if Arc::ptr_eq(a, b) {
                        "self".to_string()
                    } else {
                        link_kind(a, b)
                    }
                })
                .collect()
        })
        .collect();
    Ok(GpuInventory {
        driver: driver_version(),
        gpus,
        p2p,
        links,
    })
}

/// Times `inner` calls of `f` between two events on `stream`, in seconds per call.
pub(super) struct Timer {
    stream: Arc<CudaStream>,
    start: cudarc::driver::CudaEvent,
    end: cudarc::driver::CudaEvent,
}

impl Timer {
    fn new(ctx: &Arc<CudaContext>, stream: &Arc<CudaStream>) -> Result<Timer, String> {
        let ev = || {
            ctx.new_event(Some(sys::CUevent_flags::CU_EVENT_DEFAULT))
                .map_err(err("cannot create a CUDA event"))
        };
        Ok(Timer {
            stream: stream.clone(),
            start: ev()?,
            end: ev()?,
        })
    }

    pub(super) fn time(
        &self,
        inner: usize,
        mut f: impl FnMut() -> Result<(), String>,
    ) -> Result<f64, String> {
        self.start
            .record(&self.stream)
            .map_err(err("event record"))?;
        for _ in 0..inner {
            f()?;
        }
        self.end.record(&self.stream).map_err(err("event record"))?;
        self.end.synchronize().map_err(err("event synchronize"))?;
        let ms = self
            .start
            .elapsed_ms(&self.end)
            .map_err(err("event elapsed"))?;
        Ok(f64::from(ms) * 1e-3 / inner as f64)
    }

    /// One warm-up, then `reps` timed repetitions, each of enough calls to last `min_rep_s`.
    pub(super) fn reps(
        &self,
        reps: usize,
        min_rep_s: f64,
        mut f: impl FnMut() -> Result<(), String>,
    ) -> Result<Vec<f64>, String> {
        let one = self.time(1, &mut f)?.max(1e-7);
        let inner = ((min_rep_s / one).ceil() as usize).clamp(1, 1000);
        (0..reps).map(|_| self.time(inner, &mut f)).collect()
    }
}

struct Plan {
    max_bytes: usize,
    reps: usize,
    min_rep_s: f64,
}

fn plan(quick: bool) -> Plan {
    if quick {
        Plan {
            max_bytes: 64 << 20,
            reps: 7,
            min_rep_s: 2e-4,
        }
    } else {
        Plan {
            max_bytes: 1 << 30,
            reps: 15,
            min_rep_s: 2e-3,
        }
    }
}

/// Progress-bar steps: six swept paths (five local, one to the next device), the pair
/// matrix, then the kernels'. Steps that do not run (one device, no cuBLAS) are still ticked,
/// so the bar ends full.
pub fn steps(quick: bool) -> u64 {
    6 * super::cpu::sizes(plan(quick).max_bytes as u64).len() as u64
        + 1
        + super::cuda_kernels::steps(quick)
}

/// The catalog accelerator this device is: name matches, closest memory wins.
fn catalog_match(name: &str, memory: u64) -> Option<crate::scenario::hardware::Accelerator> {
    let l = crate::load_str("<catalog>", "");
    let spec = l.spec?;
    spec.accelerators
        .into_values()
        .filter(|a| super::validate::gpu_is(&a.name, name))
        .min_by_key(|a| a.memory.0.abs_diff(memory))
}

#[allow(clippy::too_many_lines)]
pub fn measure(o: &Options, idx: u32) -> Result<Measurement, String> {
    let ctxs = contexts()?;
    let inv = inventory_of(&ctxs)?;
    let i = idx as usize;
    let Some(ctx) = ctxs.get(i).cloned() else {
        return Err(format!(
            "no CUDA device cuda:{idx}: {} device(s) found",
            ctxs.len()
        ));
    };
    let me = inv.gpus[i].clone();
    let cat = catalog_match(&me.name, me.memory_bytes);
    let stream = ctx.new_stream().map_err(err("cannot create a stream"))?;
    let timer = Timer::new(&ctx, &stream)?;
    let p = plan(o.quick);
    let sizes = super::cpu::sizes(p.max_bytes as u64);
    let mut notes = vec![format!(
        "{} {} ({} SMs, compute capability {}, {:.1} GiB, PCI {}, NUMA node {}); {} device(s) on the host",
        format_args!("cuda:{idx}"),
        me.name,
        me.sm_count.map_or("?".into(), |n| n.to_string()),
        me.compute_capability
            .map_or("?".into(), |(a, b)| format!("{a}.{b}")),
        me.memory_bytes as f64 / (1u64 << 30) as f64,
        me.pci_bus_id.as_deref().unwrap_or("?"),
        me.numa_node.map_or("?".into(), |n| n.to_string()),
        inv.gpus.len()
    )];

    // Buffers: device src/dst, pinned (not write-combined) and pageable host.
    let n = p.max_bytes;
    let mut d_a = stream.alloc_zeros::<u8>(n).map_err(err("device alloc"))?;
    let mut d_b = stream.alloc_zeros::<u8>(n).map_err(err("device alloc"))?;
    // SAFETY: the pinned buffer is written (filled) before any copy reads it.
    let mut pinned =
        unsafe { ctx.alloc_pinned_with_flags::<u8>(n, 0) }.map_err(err("pinned host alloc"))?;
    pinned
        .as_mut_slice()
        .map_err(err("pinned host slice"))?
        .fill(0x5a);
    let mut pageable = vec![0x5au8; n];

    let mut transfers = Vec::new();
    // Each sweep is timed on the stream that issues its copies (`on`).
    let mut sweep_on = |on: &Timer,
                        path: &str,
                        source: String,
                        f: &mut dyn FnMut(usize) -> Result<(), String>|
     -> Result<(), String> {
        let mut points = Vec::new();
        for &(bytes, held_out) in &sizes {
            let reps = on.reps(p.reps, p.min_rep_s, || f(bytes as usize))?;
            points.push(Point {
                bytes,
                reps,
                held_out,
            });
            o.tick(&format!("{path} {}", super::human_bytes(bytes)));
        }
        transfers.push(PathMeasure {
            path: path.into(),
            source,
            points,
        });
        Ok(())
    };
    let src = |what: &str| {
        format!(
            "cuMemcpyAsync {what}, events around back-to-back copies on one stream, warm-up then medians; 1.5×2^k sizes held out"
        )
    };
    {
        let host = pinned.as_slice().map_err(err("pinned host slice"))?;
        sweep_on(
            &timer,
            "h2d_pinned",
            src("host (pinned) to device"),
            &mut |b| {
                stream
                    .memcpy_htod(&host[..b], &mut d_a.slice_mut(..b))
                    .map_err(err("H2D copy"))
            },
        )?;
    }
    sweep_on(
        &timer,
        "h2d_pageable",
        src("host (pageable) to device"),
        &mut |b| {
            stream
                .memcpy_htod(&pageable[..b], &mut d_a.slice_mut(..b))
                .map_err(err("H2D copy"))
        },
    )?;
    {
        let host = pinned.as_mut_slice().map_err(err("pinned host slice"))?;
        sweep_on(
            &timer,
            "d2h_pinned",
            src("device to host (pinned)"),
            &mut |b| {
                stream
                    .memcpy_dtoh(&d_a.slice(..b), &mut host[..b])
                    .map_err(err("D2H copy"))
            },
        )?;
    }
    sweep_on(
        &timer,
        "d2h_pageable",
        src("device to host (pageable)"),
        &mut |b| {
            stream
                .memcpy_dtoh(&d_a.slice(..b), &mut pageable[..b])
                .map_err(err("D2H copy"))
        },
    )?;
    sweep_on(
        &timer,
        "d2d",
        src("device to device (same GPU)"),
        &mut |b| {
            stream
                .memcpy_dtod(&d_a.slice(..b), &mut d_b.slice_mut(..b))
                .map_err(err("D2D copy"))
        },
    )?;

    // P2P: the full sweep to the next device; one 256 MiB copy for every pair. Each copy is
    // issued, and timed, on a stream of the destination GPU, pulling from the source: CUDA
    // events are only recorded on streams of the context that created them, and cudarc's
    // cross-context copy (`memcpy_peer_async`) keeps every event on its own context only when
    // the stream is the destination's (a stream of the source would record the destination
    // buffer's event on it: CUDA_ERROR_INVALID_CONTEXT).
    let mut p2p = Vec::new();
    if ctxs.len() >= 2 {
        let j = (i + 1) % ctxs.len();
        let peer = can_access_peer(&ctx, &ctxs[j]);
        if peer {
            enable_peer(&ctx, &ctxs[j]);
            enable_peer(&ctxs[j], &ctx);
        }
        let pstream = ctxs[j].new_stream().map_err(err("stream"))?;
        let ptimer = Timer::new(&ctxs[j], &pstream)?;
        let mut d_peer = pstream
            .alloc_zeros::<u8>(n)
            .map_err(err("peer device alloc"))?;
        let (path, what) = if peer {
            ("p2p", format!("cuda:{i} to cuda:{j}, peer access enabled"))
        } else {
            (
                "p2p_no_peer",
                format!("cuda:{i} to cuda:{j}, no peer access (staged)"),
            )
        };
        sweep_on(&ptimer, path, src(&what), &mut |b| {
            pstream
                .memcpy_dtod(&d_a.slice(..b), &mut d_peer.slice_mut(..b))
                .map_err(err("P2P copy"))
        })?;
        drop(d_peer);
        let pair_bytes = (256usize << 20).min(n);
        for a in 0..ctxs.len() {
            for b in 0..ctxs.len() {
                if a == b {
                    continue;
                }
                if inv.p2p[a][b] {
                    enable_peer(&ctxs[a], &ctxs[b]);
                }
                // Issued and timed on the destination's stream (see above).
                let s = ctxs[b].new_stream().map_err(err("stream"))?;
                let t = Timer::new(&ctxs[b], &s)?;
                let x = ctxs[a]
                    .default_stream()
                    .alloc_zeros::<u8>(pair_bytes)
                    .map_err(err("alloc"))?;
                let mut y = s.alloc_zeros::<u8>(pair_bytes).map_err(err("alloc"))?;
                let secs = t.reps(3, 0.0, || {
                    s.memcpy_dtod(&x, &mut y).map_err(err("P2P copy"))
                })?;
                p2p.push(PeerMeasure {
                    from: a as u32,
                    to: b as u32,
                    bytes: pair_bytes as u64,
                    secs,
                    peer_access: inv.p2p[a][b],
                    link: inv.links[a][b].clone(),
                });
            }
        }
        o.tick("P2P matrix");
    } else {
        // One device: no P2P sweep and no pairs.
        for _ in 0..=sizes.len() {
            o.tick("P2P (one device)");
        }
    }
    drop(d_b);
    drop(pinned);
    drop(pageable);

    // Kernels: launch latency, triad, FMA, GEMM.
    let reps = super::cuda_kernels::Reps {
        reps: p.reps,
        min_rep_s: p.min_rep_s,
    };
    let sms = me.sm_count.unwrap_or(132);
    let k = super::cuda_kernels::measure(
        o,
        &ctx,
        &stream,
        &timer,
        &reps,
        sms,
        cat.as_ref(),
        &mut notes,
    )?;

    let accelerator = cat
        .as_ref()
        .map_or_else(|| me.name.replace(' ', "_"), |a| a.name.clone());
    if cat.is_none() {
        notes.push("device not in the catalog: peaks are the best repetition".into());
    }
    Ok(Measurement {
        accelerator,
        device: me.name.clone(),
        driver: inv.driver.clone(),
        transfers,
        compute: k.compute,
        memory: k.memory,
        p2p,
        launch: k.launch,
        notes,
    })
}

fn enable_peer(from: &CudaContext, to: &CudaContext) {
    if from.bind_to_thread().is_ok() {
        // SAFETY: both contexts are valid; "already enabled" is an error we ignore.
        let _ = unsafe { sys::cuCtxEnablePeerAccess(to.cu_ctx(), 0) };
    }
}
