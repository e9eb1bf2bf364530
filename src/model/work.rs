//! What one rank does in one training iteration: FLOP per microbatch phase, bytes read,
//! collectives and pipeline traffic, from a model and its layout. See [`StepWork`] for what
//! each field means; the sources are cited where each is filled.

use super::check::{check_dtype, check_with, stage_layers};
use super::memory::{GRAD_BYTES, stage_params};
use super::types::{
    Among, Comm, CommOp, Layout, Recompute, Setup, Sharding, StepWork, Transformer,
};

/// The step work of `l` training `m` with `dtype_bytes`-byte weights and activations, or why
/// the layout does not divide.
pub fn step_work(m: &Transformer, l: &Layout, dtype_bytes: f64) -> Result<StepWork, String> {
    step_work_with(m, l, &Setup::default(), dtype_bytes)
}

/// [`step_work`] with the settings of `setup` (context parallelism, uneven stages,
/// overlapped tensor-parallel communication, a narrow GEMM precision; `dtype_bytes` is then
/// the 16-bit width of everything else). The per-microbatch figures are those of the stage
/// with the most layers.
pub fn step_work_with(
    m: &Transformer,
    l: &Layout,
    setup: &Setup,
    dtype_bytes: f64,
) -> Result<StepWork, String> {
    let split = check_with(m, l, setup)?;
    check_dtype(dtype_bytes)?;
    let d = dtype_bytes;
    let t = f64::from(l.tp);
    let cp = f64::from(setup.cp);
    let (first, middle, last) = stage_layers(m, l, setup);
    let most = first.max(middle).max(last);
    let n = f64::from(most);
    let mb = split.microbatches;
    // Tokens of one microbatch on one rank: the sequence split over the context-parallel
    // ranks (Megatron-LM `get_batch_on_this_cp_rank`).
    let sb = m.seq as f64 * l.micro_batch as f64 / cp;
    let sbh = sb * m.hidden as f64;
    let full = l.recompute == Recompute::Full;

    // FLOP (see `flop`): a stage's layers for one microbatch, split evenly over its TP ranks
    // (Megatron-LM splits every matrix multiply and the attention heads).
    let forward_flop = sb * n * m.layer_forward_flop_per_token() / t;
    let recompute_per_layer = m.recompute_flop_per_token(l.recompute) / f64::from(m.layers);
    let edge_flop = 3.0 * sb * m.output_forward_flop_per_token() / t;

    // Forward passes per microbatch that run a layer's communication: the forward, the
    // backward (its transpose) and a recomputed forward.
    let runs: u64 = if full { 3 } else { 2 };
    let layers = u64::from(most);
    let mut per_microbatch = Vec::new();
    if l.tp > 1 {
        // Megatron-LM (Shoeybi et al. 2019 §3): each layer all-reduces twice in the forward
        // (after attention and after the FFN) and twice in the backward. With sequence
        // parallelism each all-reduce becomes an all-gather and a reduce-scatter of the same
        // total size (Korthikanti et al. 2022 §4.2.2), and the backward gathers the input of
        // each of the two column-parallel linears again for its weight gradient: Megatron
        // saves that input sharded and re-gathers it (Megatron-LM
        // `megatron/core/tensor_parallel/layers.py`,
        // `LinearWithGradAccumulationAndAsyncCommunication.backward`: "all_gather_buffer ...
        // dist_all_gather_func(... input ...)" when `sequence_parallel`), so SP runs
        // 2·runs + 2 all-gathers per layer and 2·runs reduce-scatters.
        let count = 2 * runs * layers;
        let ops: &[(CommOp, u64)] = if l.sp {
            &[
                (CommOp::AllGather, count + 2 * layers),
                (CommOp::ReduceScatter, count),
            ]
        } else {
            &[(CommOp::AllReduce, count)]
        };
        // With a narrow precision the all-gathers carry quantized data: TransformerEngine
        // quantizes a linear layer's input (and, in the backward, its output gradient)
        // before gathering it (`transformer_engine/pytorch/module/linear.py`,
        // `gather_along_first_dim(..., quantizer=...)`; `base.py` `grad_output_preprocess`);
        // the reduce-scatters carry the GEMMs' 16-bit outputs.
        let gathered = setup.narrow_gemm_bytes.unwrap_or(d);
        for &(op, count) in ops {
            per_microbatch.push(Comm {
                op,
                among: Among::Tensor,
                bytes: sbh * if op == CommOp::AllGather { gathered } else { d },
                count,
            });
        }
    }
    if let Some(e) = m.moe.filter(|_| l.ep > 1) {
        // Expert parallelism (GShard, Lepikhin et al. 2020 §2.2): each MoE layer dispatches
        // every token's hidden state to its top_k experts and combines them back, two
        // all-to-alls per pass. With sequence parallelism each TP rank sends only its
        // sequence slice.
        let sp = if l.sp { t } else { 1.0 };
        per_microbatch.push(Comm {
            op: CommOp::AllToAll,
            among: Among::Expert,
            bytes: sbh * f64::from(e.top_k) * d / sp,
            count: 2 * runs * layers,
        });
    }

    // Pipeline sends (Narayanan et al. 2021 §4.1, scatter/gather: each TP rank sends 1/tp of
    // the b·s·h activation); an interleaved stage sends once per chunk.
    let p2p_bytes = if l.pp > 1 {
        f64::from(split.chunks) * sbh * d / t
    } else {
        0.0
    };

    // Context parallelism (Megatron-LM `--context-parallel-size`, TransformerEngine
    // `AttnFuncWithCPAndKVP2P` in `transformer_engine/pytorch/attention.py`): the cp ranks of a
    // sample form a ring; attention's forward runs cp steps, sending its current K and V chunk
    // (b·s/cp tokens of the rank's key/value heads) to the next rank during each of the first
    // cp − 1; the backward sends the chunk and its gradient.
    let kv_local = (f64::from(m.kv_heads) / t).max(1.0) * m.head_dim as f64;
    let cp_step_bytes = if setup.cp > 1 {
        2.0 * sb * kv_local * d
    } else {
        0.0
    };

    // Data-parallel reduction of the largest stage's gradients, among
    // the dp × cp ranks that hold the same weights (Megatron-LM reduces over its
    // data-parallel group with context parallelism, and its distributed optimizer shards
    // over it).
    let at = |s: u32| super::Split {
        layers_per_stage: match s {
            0 => first,
            s if s + 1 == l.pp => last,
            _ => middle,
        },
        ..split
    };
    // With uneven stages a middle stage (stage 1 stands for them) may hold the most.
    let [first_p, middle_p, last_p] =
        [0, l.pp.min(2) - 1, l.pp - 1].map(|s| stage_params(m, l, &at(s), s));
    let larger = |a: super::memory::StageParams, b: super::memory::StageParams| {
        if b.dense > a.dense { b } else { a }
    };
    let biggest = larger(larger(first_p, middle_p), last_p);
    let mut per_iteration = Vec::new();
    for (params, replicas, among) in [
        (biggest.dense, l.dp * setup.cp, Among::Data),
        (biggest.expert, split.expert_dp, Among::ExpertData),
    ] {
        if replicas > 1 && params > 0.0 {
            per_iteration.extend(gradient_comms(l.sharding, params, d, mb, runs, among));
        }
    }

    // The optimizer updates the biggest stage's parameters, a 1/dp (1/(dp/ep) for experts)
    // shard of them when the optimizer state is sharded (ZeRO-1 and up).
    let updated = match l.sharding {
        Sharding::None => biggest.dense + biggest.expert,
        _ => biggest.dense / (f64::from(l.dp) * cp) + biggest.expert / f64::from(split.expert_dp),
    };

    let bubble_fraction = match l.pp {
        1 => 0.0,
        p => f64::from(p - 1) / (f64::from(split.chunks) * mb as f64),
    };
    let tokens = l.global_batch as f64 * m.seq as f64;
    Ok(StepWork {
        microbatches: mb,
        forward_flop,
        backward_flop: 2.0 * forward_flop,
        recompute_flop: sb * n * recompute_per_layer / t,
        edge_flop,
        layer: super::ops::layer_kernels_with(m, l, setup, d),
        layers_per_stage: middle,
        first_stage_layers: first,
        last_stage_layers: last,
        output: super::ops::output_kernels_with(m, l, setup, d),
        optimizer: super::ops::optimizer_kernel(updated),
        per_microbatch,
        tp_comm_overlap: setup.tp_comm_overlap && l.sp,
        cp: setup.cp,
        cp_step_bytes,
        p2p_bytes,
        per_iteration,
        bubble_fraction,
        tokens,
        model_flop: tokens * m.model_flop_per_token(),
    })
}

/// Gradient reduction among data-parallel replicas of `params` parameters per rank, per
/// iteration of `microbatches` microbatches (ZeRO, Rajbhandari et al. 2020 §5 and §7):
/// - no sharding: one all-reduce of the fp32 gradients after the last microbatch;
/// - ZeRO-1 (Megatron's distributed optimizer): a reduce-scatter of the gradients, each
///   replica updates its shard, an all-gather of the updated weights;
/// - ZeRO-2: a replica keeps only its gradient shard, so each microbatch's gradients are
///   reduce-scattered as they are made, and the weights all-gathered once;
/// - ZeRO-3: the weights are gathered for every pass that uses them (forward, backward and a
///   recomputed forward: `runs`) and the gradients reduce-scattered every microbatch.
fn gradient_comms(
    sharding: Sharding,
    params: f64,
    d: f64,
    microbatches: u64,
    runs: u64,
    among: Among,
) -> Vec<Comm> {
    let grads = params * GRAD_BYTES;
    let weights = params * d;
    let comm = |op, bytes, count| Comm {
        op,
        among,
        bytes,
        count,
    };
    match sharding {
        Sharding::None => vec![comm(CommOp::AllReduce, grads, 1)],
        Sharding::Zero1 => vec![
            comm(CommOp::ReduceScatter, grads, 1),
            comm(CommOp::AllGather, weights, 1),
        ],
        Sharding::Zero2 => vec![
            comm(CommOp::ReduceScatter, grads, microbatches),
            comm(CommOp::AllGather, weights, 1),
        ],
        Sharding::Zero3 => vec![
            comm(
                CommOp::AllGather,
                weights,
                runs.saturating_mul(microbatches),
            ),
            comm(CommOp::ReduceScatter, grads, microbatches),
        ],
    }
}
