//! Which algorithm and protocol a collective runs with: NCCL's own choice where its tuning
//! model applies ([`super::tuning`]), else the one fixed or ring with Simple.

use super::*;

/// The algorithm and protocol NCCL would run `op` of `bytes` over `ranks` with, either or
/// both fixed by the caller ([`tuning::choose`]: least time by NCCL's own estimate among
/// ring, tree and NVLS × LL, LL128 and Simple, on NVIDIA devices). All-to-all and send/recv
/// are pairwise, Simple (NCCL runs them as point-to-point copies, outside its tuning model).
/// Where NCCL's model does not apply (other vendors, mixed generations) the algorithm is the
/// one fixed or ring, and the protocol Simple; `Err` when a protocol was fixed there, or
/// when NCCL has no such (algorithm, protocol) for the op.
pub fn pick(
    graph: &Graph,
    op: Op,
    ranks: &[Rank],
    bytes: f64,
    algorithm: Option<Algorithm>,
    protocol: Option<Protocol>,
) -> Result<(Algorithm, Protocol), String> {
    if matches!(op, Op::AllToAll | Op::SendRecv) {
        return match protocol {
            None | Some(Protocol::Simple) => Ok((Algorithm::Pairwise, Protocol::Simple)),
            Some(p) => Err(format!(
                "{} runs as NCCL point-to-point copies, outside its protocols; `{}` does not apply",
                op.name(),
                p.name()
            )),
        };
    }
    let Some(c) = graph.nccl_comm(ranks) else {
        return match protocol {
            None | Some(Protocol::Simple) => {
                Ok((algorithm.unwrap_or(Algorithm::Ring), Protocol::Simple))
            }
            Some(p) => Err(format!(
                "protocol `{}` is NCCL's, and these ranks' devices have no NCCL tuning model \
                 (not NVIDIA, or mixed generations)",
                p.name()
            )),
        };
    };
    match tuning::choose(&c, op, bytes, algorithm, protocol) {
        Some(pair) => Ok(pair),
        // NCCL's model has no pair for it (hierarchical; in-switch across nodes, which is
        // CollNet/SHARP, Simple only): Simple.
        None if protocol.is_none_or(|p| p == Protocol::Simple) => {
            Ok((algorithm.unwrap_or(Algorithm::Ring), Protocol::Simple))
        }
        None => Err(format!(
            "NCCL has no {}{} for {} over these ranks",
            algorithm.map_or("algorithm", |a| a.name()),
            protocol.map_or(String::new(), |p| format!(" with protocol {}", p.name())),
            op.name()
        )),
    }
}

/// How a call runs: the algorithm its flows follow, its options, and, when a calibration
/// profile's measurement prices it, which fit ([`measured::describe`]).
#[derive(Debug, Clone, PartialEq)]
pub struct Choice {
    pub algorithm: Algorithm,
    pub protocol: Protocol,
    pub options: Options,
    pub measured: Option<String>,
}

/// [`pick`], then the measurement of the ranks' calibration profile where one applies: the
/// caller fixed neither algorithm nor protocol (a measurement is of NCCL's own choice; the
/// pairwise ops have one algorithm), and the profile timed `op` on a communicator of this
/// shape ([`measured::lookup`]).
pub fn configure(
    graph: &Graph,
    op: Op,
    ranks: &[Rank],
    bytes: f64,
    algorithm: Option<Algorithm>,
    protocol: Option<Protocol>,
) -> Result<Choice, String> {
    let (algo, proto) = pick(graph, op, ranks, bytes, algorithm, protocol)?;
    let mut options = Options {
        protocol: proto,
        ..Options::default()
    };
    let free =
        protocol.is_none() && (algorithm.is_none() || matches!(op, Op::AllToAll | Op::SendRecv));
    let mut by = None;
    if free
        && ranks.len() >= 2
        && let Some((fit, profile)) = measured::lookup(graph, op, ranks)
        && let Some(m) = measured::at(fit, bytes)
    {
        options.measured = Some(m);
        by = Some(measured::describe(fit, profile));
    }
    Ok(Choice {
        algorithm: algo,
        protocol: proto,
        options,
        measured: by,
    })
}
