//! The timeline as a Chrome / Perfetto trace (JSON "Trace Event Format"): one complete event
//! (`ph: "X"`) per device and span, `pid` = node, `tid` = device within the node, named by
//! metadata events, times in microseconds. Open it at ui.perfetto.dev or chrome://tracing.

use std::fmt::Write;

use crate::sim::timeline::Timeline;

/// Most events one trace holds (about 100 bytes each); the rest are left out and the trace's
/// metadata says so.
pub const MAX_EVENTS: usize = 2_000_000;

fn esc(s: &str) -> String {
    serde_json::to_string(s).unwrap_or_else(|_| "\"?\"".into())
}

/// The trace JSON of `t`, with `header` (scenario, hash, seed, version) in its metadata.
pub fn perfetto(t: &Timeline, header: &str) -> String {
    let mut o = String::with_capacity(64 * 1024);
    o.push_str("{\"displayTimeUnit\":\"ms\",\"traceEvents\":[\n");
    let mut first = true;
    let mut sep = |o: &mut String| {
        if !first {
            o.push_str(",\n");
        }
        first = false;
    };
    // Names: process per node, thread per device.
    let mut seen_node = std::collections::BTreeSet::new();
    let mut local = vec![0u32; t.devices.len()];
    let mut next_local: std::collections::HashMap<u32, u32> = Default::default();
    for (d, name) in t.devices.iter().enumerate() {
        let node = t.device_node[d];
        let k = next_local.entry(node).or_insert(0);
        local[d] = *k;
        *k += 1;
        let node_name = name.rsplit_once('.').map(|x| x.0).unwrap_or(name);
        if seen_node.insert(node) {
            sep(&mut o);
            let _ = write!(
                o,
                "{{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":{node},\"args\":{{\"name\":{}}}}}",
                esc(node_name)
            );
        }
        sep(&mut o);
        let _ = write!(
            o,
            "{{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":{node},\"tid\":{},\"args\":{{\"name\":{}}}}}",
            local[d],
            esc(name)
        );
    }
    let mut events = 0usize;
    let mut truncated = t.truncated;
    'spans: for s in &t.spans {
        for &d in &t.sets[s.set as usize] {
            if events >= MAX_EVENTS {
                truncated = true;
                break 'spans;
            }
            events += 1;
            sep(&mut o);
            let _ = write!(
                o,
                "{{\"ph\":\"X\",\"name\":{},\"cat\":\"{}\",\"ts\":{:.3},\"dur\":{:.3},\"pid\":{},\"tid\":{}}}",
                esc(&t.labels[s.label as usize]),
                s.kind.name(),
                s.start * 1e6,
                (s.end - s.start) * 1e6,
                t.device_node[d as usize],
                local[d as usize]
            );
        }
    }
    let _ = write!(
        o,
        "\n],\"metadata\":{{\"orrery\":{},\"events\":{events},\"truncated\":{truncated}}}}}\n",
        esc(header)
    );
    o
}
