//! What each LLM serving engine spends per iteration beside its kernels (issue 39, item 1),
//! and its defaults: vLLM, TensorRT-LLM and SGLang, each figure from the engine's source or
//! a published measurement, cited where it is defined.
//!
//! An iteration of an engine costs, beside its kernels' roofline:
//! - **kernels**: each kernel costs the profile's launch overhead L on the GPU even inside a
//!   captured CUDA graph (its ramp, tail and dependency wait): Llama-3 8B decodes one token in
//!   7.06–7.37 ms with CUDA graphs on H100 at batch 1 (sgl-project/sglang PR #1401 and issue
//!   #1008), 1.4–1.7 ms more than its 16 GB of weights take at the profile's bandwidth, over
//!   its 291 kernels: about 5 µs each, the profile's L. A batch the engine does not replay as
//!   a graph (a decode-only batch of more than [`Kind::graph_max_batch`] sequences, any batch
//!   with a prompt, or `graphs off`) also launches each kernel from the host, L more each:
//!   eager decode takes 0.9–2.2 ms longer there (PR #1401), 3–7.5 µs per kernel. vLLM also
//!   replays mixed batches of up to its capture size in tokens as piecewise graphs (split at
//!   attention), whose attention kernels and pieces are launched from the host
//!   ([`Kind::launch_secs`]).
//! - **host time** the overlapped schedulers do not hide, [`HOST_GAP_S`] per iteration.
//! - **tensor-parallel all-reduces**: engines run small ones with their own one-node kernels
//!   ([`custom_allreduce_secs`]) and larger ones with NCCL.
//!
//! Architecture invariant: this module knows engines, not the simulator: it returns
//! seconds and defaults; `sim::llm` decides when they apply.

use serde::Serialize;

/// The serving engine a replica runs (`engine vllm|trtllm|sglang`); vLLM by default.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum Kind {
    #[default]
    Vllm,
    Trtllm,
    Sglang,
}

/// Words naming the engines in the language.
pub const WORDS: &[&str] = &["vllm", "trtllm", "sglang"];

/// Host time per iteration an overlapped scheduler leaves exposed between two GPU steps:
/// 150–170 µs measured with CUDA graphs once vLLM scheduled one step ahead (vllm-project/vllm
/// PR #11133, Llama-2-7B, batch 256; the midpoint here). vLLM V1's async scheduling,
/// SGLang's overlap scheduler (v0.4 blog, on by default) and TensorRT-LLM's overlap
/// scheduler (its docs: on by default) all prepare step n+1 while step n runs; neither
/// SGLang nor TensorRT-LLM publishes its gap in µs, so the one measured figure stands for
/// all three (an assumption).
pub const HOST_GAP_S: f64 = 160e-6;

impl Kind {
    pub fn name(self) -> &'static str {
        match self {
            Kind::Vllm => "vllm",
            Kind::Trtllm => "trtllm",
            Kind::Sglang => "sglang",
        }
    }

    pub fn from_word(w: &str) -> Option<Kind> {
        match w {
            "vllm" => Some(Kind::Vllm),
            "trtllm" => Some(Kind::Trtllm),
            "sglang" => Some(Kind::Sglang),
            _ => None,
        }
    }

    /// Tokens per iteration by default: vLLM's `max_num_batched_tokens` for its OpenAI
    /// server on large GPUs, 8192 (`vllm/engine/arg_utils.py`); TensorRT-LLM's
    /// `max_num_tokens`, 8192 since v0.11 (docs/source/performance/perf-best-practices.md at
    /// 06255cb7); SGLang's `chunked_prefill_size` on 60–160 GB GPUs, 8192
    /// (`python/sglang/srt/server_args.py`).
    pub fn token_budget(self) -> u32 {
        8192
    }

    /// Running sequences by default: vLLM's `max_num_seqs` 256 (V0, and V1 on A100-class
    /// parts; V1 takes 1024 on ≥ 70 GiB parts other than A100 — write `max_seqs 1024` there);
    /// TensorRT-LLM's `max_batch_size` 2048 (BuildConfig); SGLang's request slots,
    /// KV tokens / context length × 512 clamped to 2048..4096 (`model_runner.py`
    /// `init_memory_pool`): 2048, its floor (4096 for a pool of 8 full contexts or more —
    /// write `max_seqs` then).
    pub fn max_seqs(self) -> u32 {
        match self {
            Kind::Vllm => 256,
            Kind::Trtllm | Kind::Sglang => 2048,
        }
    }

    /// Tokens per KV block: vLLM `block_size` 16; TensorRT-LLM `tokens_per_block` 32 (its
    /// runtime stats, NVIDIA/TensorRT-LLM issue #6364: `"tokensPerBlock":32`); SGLang
    /// `page_size` 1 (a token-level pool).
    pub fn kv_block(self) -> u32 {
        match self {
            Kind::Vllm => 16,
            Kind::Trtllm => 32,
            Kind::Sglang => 1,
        }
    }

    /// Whether prompts are split across iterations by default: vLLM V1 always
    /// (`arg_utils.py`: "V1 always uses chunked prefills"); SGLang with
    /// `chunked_prefill_size` set by default; TensorRT-LLM only with
    /// `--enable_chunked_context`, a store-true flag (off).
    pub fn chunked_prefill(self) -> bool {
        !matches!(self, Kind::Trtllm)
    }

    /// The KV blocks admission takes by default: TensorRT-LLM's default capacity scheduler,
    /// `GUARANTEED_NO_EVICT`, reserves a request's whole prompt and output, so a running
    /// request is never preempted (`SchedulerConfig`; docs/source/performance/
    /// perf-best-practices.md at 06255cb7 contrasts it with `MAX_UTILIZATION`); vLLM
    /// allocates as tokens come and preempts when the pool runs out; SGLang admits a request
    /// whose output length is known (EOS ignored, as its benchmarks send) only if the pool
    /// lasts until the running ones finish.
    pub fn reserve(self) -> super::engine_config::Reserve {
        use super::engine_config::Reserve;
        match self {
            Kind::Vllm => Reserve::Off,
            Kind::Trtllm => Reserve::Request,
            Kind::Sglang => Reserve::Lookahead,
        }
    }

    /// Share of each device's memory for weights and KV cache by default, for a service of
    /// `ranks` devices a replica (tp × pp): vLLM's `gpu_memory_utilization` 0.9;
    /// TensorRT-LLM's `kv_cache_free_gpu_mem_fraction` 0.9 (of what the weights leave; taken
    /// of the whole here); SGLang's `mem_fraction_static`, smaller the more ranks hold a
    /// replica since each keeps more for activations and communication buffers: 0.88 on one,
    /// 0.87 from 2, 0.85 from 4, 0.81 from 8, 0.79 from 16 (`ServerArgs.__post_init__`,
    /// `python/sglang/srt/server_args.py`, the v0.4 releases).
    pub fn memory_fraction(self, ranks: u32) -> f64 {
        match self {
            Kind::Vllm | Kind::Trtllm => 0.9,
            Kind::Sglang => match ranks {
                16.. => 0.79,
                8.. => 0.81,
                4.. => 0.85,
                2.. => 0.87,
                _ => 0.88,
            },
        }
    }

    /// Whether one iteration computes prompt chunks and decodes together: vLLM V1's
    /// scheduler and TensorRT-LLM's in-flight batching do; SGLang runs a prefill batch
    /// whenever it can form one and a decode batch otherwise (`Scheduler.
    /// get_next_batch_to_run`; `enable_mixed_chunk` defaults to False in `server_args.py`).
    pub fn mixes_prefill_and_decode(self) -> bool {
        !matches!(self, Kind::Sglang)
    }

    /// Largest decode batch replayed as a captured CUDA graph: vLLM's `max_capture_size`
    /// 512 (`CompilationConfig`); SGLang's `cuda_graph_max_bs`, 256 below tp 4 and 512 from
    /// it on 80–160 GB parts (`server_args.py`); TensorRT-LLM's
    /// `DecodeCudaGraphConfig` "default max_batch_size of 128".
    pub fn graph_max_batch(self, tp: u32) -> u32 {
        match self {
            Kind::Vllm => 512,
            Kind::Trtllm => 128,
            Kind::Sglang if tp < 4 => 256,
            Kind::Sglang => 512,
        }
    }

    /// Largest all-reduce (bytes per rank) the engine runs with its own kernel, and the
    /// tensor-parallel sizes it may: vLLM's `CustomAllreduce` `max_size` 8 MiB for world
    /// sizes 2, 4, 6, 8 (`vllm/distributed/device_communicators/custom_all_reduce.py` at
    /// 00d618aa); SGLang's port of it, the same; TensorRT-LLM's workspace, 16,000,000 bytes
    /// for 2 ranks and 8,000,000 above, up to 16 ranks (`cpp/tensorrt_llm/common/
    /// customAllReduceUtils.h` at 005b299b, `MAX_RANKS_PER_NODE`).
    pub fn custom_allreduce_max(self, tp: u32) -> Option<f64> {
        match self {
            Kind::Vllm | Kind::Sglang if matches!(tp, 2 | 4 | 6 | 8) => Some(8.0 * 1048576.0),
            Kind::Trtllm if tp == 2 => Some(16e6),
            Kind::Trtllm if (3..=16).contains(&tp) => Some(8e6),
            _ => None,
        }
    }

    /// Seconds the iteration's kernels cost beside their rooflines (see the module doc): L each
    /// for a decode-only batch of at most `graph_batch` sequences ([`Kind::graph_max_batch`]
    /// when `None`), replayed as one graph; with vLLM, a batch with prompt tokens of at most
    /// that many tokens replays piecewise graphs (its default `cudagraph_mode`
    /// FULL_AND_PIECEWISE, the pieces split at attention: `vllm/config/compilation.py`), L
    /// each and L more for each layer's attention kernel launched from the host and each of
    /// the layers + 1 pieces; any other batch (or `graphs off`) 2L each, launched from the host.
    pub fn launch_secs(self, tp: u32, graph_batch: Option<u32>, b: &Launches, launch: f64) -> f64 {
        let most = f64::from(graph_batch.unwrap_or_else(|| self.graph_max_batch(tp)));
        let k = b.kernels * launch;
        if !b.graphs {
            2.0 * k
        } else if b.decode_only && b.seqs <= most {
            k
        } else if self == Kind::Vllm && b.tokens <= most {
            k + (2.0 * b.layers + 1.0) * launch
        } else {
            2.0 * k
        }
    }
}

/// An iteration's batch as its launches see it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Launches {
    /// CUDA graphs on (`graphs on`).
    pub graphs: bool,
    /// Every sequence computes one token.
    pub decode_only: bool,
    pub seqs: f64,
    pub tokens: f64,
    pub kernels: f64,
    pub layers: f64,
}

/// Bytes per rank of the published per-call figures below (bf16 elements × 2).
const SIZES: [f64; 6] = [1024.0, 8192.0, 65536.0, 524288.0, 1048576.0, 2097152.0];

/// µs per call on H100 SXM without CUDA graphs (copy-input mode), for 2, 4 and 8 ranks:
/// sgl-project/sglang PR #2904 (`tests/test_trt_reduce.py`, 512 to 1,048,576 bf16 elements).
/// vLLM's kernel (`csrc/custom_all_reduce.cuh`) and the TensorRT-LLM-derived one SGLang and
/// TensorRT-LLM run.
const VLLM_US: [[f64; 6]; 3] = [
    [9.5, 8.8, 8.7, 12.9, 17.7, 26.6],
    [9.1, 8.5, 9.2, 20.6, 26.9, 40.2],
    [10.1, 9.3, 11.8, 24.1, 30.4, 45.0],
];
const TRT_US: [[f64; 6]; 3] = [
    [3.7, 3.9, 4.5, 7.9, 12.5, 19.9],
    [4.8, 3.7, 4.8, 13.9, 20.2, 31.1],
    [5.9, 5.7, 7.8, 16.7, 22.1, 33.8],
];

/// Seconds of one custom all-reduce of `bytes` per rank among `tp` ranks of one NVLink
/// node with engine `kind`'s kernel, from the H100 measurements above: piecewise linear in
/// bytes between them (never falling as the message grows: each figure at least the one
/// before), the 1 KiB figure below it, and beyond 2 MiB the last segment's slope (the
/// two-shot kernel's time is linear in bytes). 6 ranks take 8 ranks' figures; `None` where
/// the engine would not run its own kernel (see [`Kind::custom_allreduce_max`]) or there
/// is no figure (more than 8 ranks).
pub fn custom_allreduce_secs(kind: Kind, tp: u32, bytes: f64) -> Option<f64> {
    let max = kind.custom_allreduce_max(tp)?;
    if bytes >= max {
        return None;
    }
    let row = match tp {
        2 => 0,
        3 | 4 => 1,
        5..=8 => 2,
        _ => return None,
    };
    let table = match kind {
        Kind::Vllm => &VLLM_US[row],
        Kind::Trtllm | Kind::Sglang => &TRT_US[row],
    };
    let mut us = [0.0; 6];
    let mut top: f64 = 0.0;
    for (i, t) in table.iter().enumerate() {
        top = top.max(*t);
        us[i] = top;
    }
    let at = |i: usize| (SIZES[i], us[i]);
    let t = if bytes <= SIZES[0] {
        us[0]
    } else {
        let i = SIZES
            .iter()
            .position(|s| bytes <= *s)
            .unwrap_or(SIZES.len() - 1)
            .max(1);
        let ((x0, y0), (x1, y1)) = (at(i - 1), at(i));
        y0 + (y1 - y0) * (bytes - x0) / (x1 - x0)
    };
    Some(t * 1e-6)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn custom_allreduce_reads_the_published_figures() {
        // At the measured sizes the figures themselves (µs).
        let us = |k, tp, b: f64| custom_allreduce_secs(k, tp, b).unwrap() * 1e6;
        assert!((us(Kind::Vllm, 8, 2097152.0) - 45.0).abs() < 1e-9);
        assert!((us(Kind::Sglang, 4, 524288.0) - 13.9).abs() < 1e-9);
        // Below 1 KiB: the floor; 1 KiB to 8 KiB: never below the 1 KiB figure.
        assert!((us(Kind::Trtllm, 8, 16.0) - 5.9).abs() < 1e-9);
        assert!((us(Kind::Trtllm, 8, 4096.0) - 5.9).abs() < 1e-9);
        // Beyond 2 MiB the last slope: 4 MiB on 8 ranks = 33.8 + 2 × (33.8 − 22.1).
        assert!((us(Kind::Sglang, 8, 4194304.0) - 57.2).abs() < 1e-9);
        // Between: linear, halfway from 1 MiB to 2 MiB.
        assert!((us(Kind::Vllm, 2, 1572864.0) - 22.15).abs() < 1e-9);
    }

    #[test]
    fn custom_allreduce_applies_where_the_engine_runs_it() {
        // vLLM: world sizes 2, 4, 6, 8 and under 8 MiB.
        assert!(custom_allreduce_secs(Kind::Vllm, 8, 8.0 * 1048576.0).is_none());
        assert!(custom_allreduce_secs(Kind::Vllm, 8, 8.0 * 1048576.0 - 1.0).is_some());
        assert!(custom_allreduce_secs(Kind::Vllm, 3, 1024.0).is_none());
        assert!(custom_allreduce_secs(Kind::Vllm, 16, 1024.0).is_none());
        // TensorRT-LLM: its workspace, 16 MB on 2 ranks, 8 MB above.
        assert!(custom_allreduce_secs(Kind::Trtllm, 2, 15e6).is_some());
        assert!(custom_allreduce_secs(Kind::Trtllm, 4, 9e6).is_none());
        // 16 ranks may run it but there is no figure: NCCL prices it.
        assert!(custom_allreduce_secs(Kind::Trtllm, 16, 1024.0).is_none());
    }

    #[test]
    fn time_never_falls_as_the_message_grows() {
        for k in [Kind::Vllm, Kind::Trtllm, Kind::Sglang] {
            for tp in [2, 4, 6, 8] {
                let mut last = 0.0;
                let mut b = 16.0;
                while let Some(t) = custom_allreduce_secs(k, tp, b) {
                    assert!(t >= last, "{k:?} tp {tp} at {b} bytes");
                    last = t;
                    b *= 1.25;
                }
            }
        }
    }

    #[test]
    fn graphs_replace_launches_for_small_decode_batches() {
        let l = 5e-6;
        let b = |graphs, decode_only, seqs, tokens| Launches {
            graphs,
            decode_only,
            seqs,
            tokens,
            kernels: 291.0,
            layers: 32.0,
        };
        let k = 291.0 * l;
        // A decode batch the engine captured: L per kernel; one more than it captures: 2L.
        assert_eq!(
            Kind::Vllm.launch_secs(1, None, &b(true, true, 512.0, 512.0), l),
            k
        );
        assert_eq!(
            Kind::Vllm.launch_secs(1, None, &b(true, true, 513.0, 513.0), l),
            2.0 * k
        );
        assert_eq!(
            Kind::Vllm.launch_secs(1, Some(1024), &b(true, true, 513.0, 513.0), l),
            k
        );
        // vLLM's piecewise graphs for a mixed batch within its capture size: the attention
        // kernels and the 33 pieces launched from the host.
        let mixed = b(true, false, 4.0, 300.0);
        assert_eq!(Kind::Vllm.launch_secs(1, None, &mixed, l), k + 65.0 * l);
        assert_eq!(Kind::Sglang.launch_secs(1, None, &mixed, l), 2.0 * k);
        // `graphs off`: every kernel from the host.
        assert_eq!(
            Kind::Vllm.launch_secs(1, None, &b(false, true, 4.0, 4.0), l),
            2.0 * k
        );
        assert_eq!(Kind::Sglang.graph_max_batch(2), 256);
        assert_eq!(Kind::Sglang.graph_max_batch(4), 512);
        assert_eq!(
            Kind::Trtllm.launch_secs(8, None, &b(true, true, 129.0, 129.0), l),
            2.0 * k
        );
    }
}
