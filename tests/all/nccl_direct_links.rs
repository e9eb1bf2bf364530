//! What NCCL's tuning model sees inside a node whose GPUs are linked directly (a mesh, as on
//! AMD and DGX-1-style boards, here with NVIDIA parts so NCCL's model applies): a rank's
//! direct links to the communicator's other GPUs, not to every GPU of the node. Counting all
//! of them made NCCL's choice keep a slow protocol too long for a few ranks of an 8-GPU mesh,
//! and a larger message then took less time.

use orrery::experiment::collectives::{self as ec, parse_sizes, place_ranks, table};
use orrery::load_str;
use orrery::scenario::Spec;

fn spec(src: &str) -> Spec {
    let l = load_str("t.orr", src);
    assert!(!l.has_errors(), "{}", l.render(false));
    l.spec.unwrap()
}

/// Eight A100s linked all-to-all (each GPU's NVLink spread over its 7 peers).
const MESH: &str = "node mesh8 {\n  cpu sockets 2, cores 32, numa 2\n  memory 512 GB\n  pcie gen4\n  \
    device A100_80GB x 8 at numa [0, 1] link mesh\n  nic ib_hdr_200g x 1 role compute\n  \
    source \"test: an 8-GPU NVLink mesh\"\n}\n\
    cluster c {\n  rack r0 {\n    node mesh8 x 2\n  }\n  fabric fat_tree\n}\n";

#[test]
fn a_few_ranks_of_a_mesh_never_get_faster_with_a_larger_message() {
    let s = spec(MESH);
    let sizes = parse_sizes("1K..1G").unwrap();
    for sel in ["1x2", "1x3", "1x4", "1x8", "2x2"] {
        for opname in ["allreduce", "allgather", "reducescatter", "broadcast"] {
            let op = ec::parse_op(opname).unwrap();
            let (ranks, policy) = place_ranks(&s, sel).unwrap();
            let t = table(&s, op, None, None, ranks, policy, &sizes).unwrap();
            let falls = t
                .rows
                .windows(2)
                .find(|w| w[1].result.secs < w[0].result.secs - 1e-12);
            assert!(
                falls.is_none(),
                "{opname} {sel}: {:?}",
                falls.map(|w| (w[0].bytes, w[0].result.secs, w[1].result.secs))
            );
        }
    }
}
