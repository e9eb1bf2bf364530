//! The rows of the timeline plot and `timeline.csv`, from a run's [`Timeline`]: one per device
//! for small clusters, aggregated per node or per rack for large ones (see [`timeline_rows`]).

use std::fmt::Write as _;

use crate::plot::{self, SpanKind, TimelineRow};
use crate::sim::timeline::{SpanKind as SimKind, Timeline};

fn kind(k: SimKind) -> SpanKind {
    match k {
        SimKind::Compute => SpanKind::Compute,
        SimKind::Communication => SpanKind::Communication,
        SimKind::Checkpoint => SpanKind::Checkpoint,
        SimKind::Failed => SpanKind::Failed,
    }
}

/// Rows with at most this many spans are drawn exactly; busier rows are reduced to
/// [`TIMELINE_BINS`] bins (see [`timeline_rows`]).
pub const EXACT_SPANS: usize = 300;
/// Bins a busy row is reduced to (each drawn as up to four slices; ~9 pixels a bin, so a
/// 10 % share is still a visible pixel).
pub const TIMELINE_BINS: usize = 150;

/// What the timeline's rows are: one per device, or devices aggregated per node or per rack
/// (or per run of consecutive racks), how many devices and nodes they cover, and how many
/// rows are CPU rows (a node's, or the unit's nodes', CPUs: [`timeline_rows`]).
#[derive(Debug, Clone, PartialEq)]
pub struct Rows {
    pub rows: Vec<TimelineRow>,
    /// `device`, `node`, `rack` or `rack group`.
    pub per: &'static str,
    pub devices: usize,
    pub nodes: usize,
    pub cpu_rows: usize,
}

impl Rows {
    /// What the rows show, with the real counts (for titles and captions).
    pub fn describe(&self) -> String {
        let (d, n) = (self.devices, self.nodes);
        let devices = match self.per {
            "device" => format!("{d} devices, one row each"),
            per => format!(
                "{d} devices on {n} nodes, one row per {per} ({} rows): each bin's share of the \
                 {per}'s device-time",
                self.rows.len() - self.cpu_rows
            ),
        };
        if self.cpu_rows == 0 {
            return devices;
        }
        let unit = if self.per == "device" {
            "node"
        } else {
            self.per
        };
        format!(
            "{devices}; and a CPU row per {unit} with CPU work ({} rows): each bin's share of its \
             CPU-time (CPUs × time)",
            self.cpu_rows
        )
    }
}

/// The timeline's rows: one per device when the run's device rows and CPU rows together are
/// at most [`plot::MAX_TIMELINE_ROWS`]; else one per node, per rack, or per run of
/// consecutive racks, whichever first fits — every device is in a row. A node with CPU work
/// (`Timeline::cpu_spans`) adds a CPU row after its devices' row(s) (per rack: one per rack
/// with CPU work, of its nodes' CPUs). A device row with more than [`EXACT_SPANS`] spans (a
/// long training job's steps), and every aggregated or CPU row, is drawn at the plot's
/// resolution: `[0, t_end]` cut into [`TIMELINE_BINS`] bins, each drawn as consecutive slices
/// whose widths are the shares of the bin each kind took (compute, communication,
/// checkpoint, failed; the rest idle) — of the device's time, of the row's device-time
/// (devices × bin) when aggregated, or of its CPU-time (CPUs × bin) for a CPU row. A training
/// job's 13 % of communication shows as 13 % of every bin instead of vanishing; a node's 4 of
/// 64 CPUs busy shows as 6.25 % of every bin. `timeline.csv` holds these rows.
pub fn timeline_rows(t: &Timeline, t_end: f64) -> Rows {
    let t_end = t
        .spans
        .iter()
        .map(|s| s.end)
        .chain(t.cpu_spans.iter().map(|s| s.end))
        .fold(if t_end.is_finite() { t_end } else { 0.0 }, f64::max);
    let max = plot::MAX_TIMELINE_ROWS;
    let n_nodes = t.nodes.len().max(
        t.device_node
            .iter()
            .map(|n| *n as usize + 1)
            .max()
            .unwrap_or(0),
    );
    let mut has_dev = vec![false; n_nodes];
    for n in &t.device_node {
        has_dev[*n as usize] = true;
    }
    let mut has_cpu = vec![false; n_nodes];
    for s in &t.cpu_spans {
        if let Some(x) = has_cpu.get_mut(s.node as usize) {
            *x = true;
        }
    }
    let dev_nodes = has_dev.iter().filter(|x| **x).count();
    let cpu_nodes = has_cpu.iter().filter(|x| **x).count();
    let devices = t.devices.len();
    let node_name = |n: usize| {
        t.nodes
            .get(n)
            .cloned()
            .unwrap_or_else(|| format!("node {n}"))
    };
    if devices + cpu_nodes <= max {
        // One row per device, then its node's CPU row (devices are in node order).
        let mut dev = device_rows(t, t_end).into_iter().enumerate().peekable();
        let mut cpu = cpu_rows(t, t_end, &has_cpu, Some, &node_name);
        let mut rows = Vec::new();
        for n in 0..n_nodes {
            while let Some((_, row)) =
                dev.next_if(|(d, _)| t.device_node.get(*d).is_some_and(|x| *x as usize == n))
            {
                rows.push(row);
            }
            if let Some(row) = cpu.remove(&n) {
                rows.push(row);
            }
        }
        rows.extend(dev.map(|(_, row)| row));
        return Rows {
            rows,
            per: "device",
            devices,
            nodes: dev_nodes,
            cpu_rows: cpu_nodes,
        };
    }
    // The unit (node, or run of racks) of each node, and the units' labels.
    let rack_of = |n: usize| t.node_rack.get(n).copied().unwrap_or(0);
    let count = |unit: &[Option<usize>], units: usize| -> usize {
        let mut dev = vec![false; units];
        let mut cpu = vec![false; units];
        for n in 0..n_nodes {
            if let Some(u) = unit[n] {
                dev[u] |= has_dev[n];
                cpu[u] |= has_cpu[n];
            }
        }
        dev.iter().filter(|x| **x).count() + cpu.iter().filter(|x| **x).count()
    };
    let shown = |n: usize| has_dev[n] || has_cpu[n];
    let (per, unit, labels): (&'static str, Vec<Option<usize>>, Vec<String>) = {
        let mut unit = vec![None; n_nodes];
        let mut labels = Vec::new();
        for n in (0..n_nodes).filter(|&n| shown(n)) {
            unit[n] = Some(labels.len());
            labels.push(node_name(n));
        }
        if count(&unit, labels.len()) <= max {
            ("node", unit, labels)
        } else {
            let mut racks: Vec<u32> = (0..n_nodes).filter(|&n| shown(n)).map(rack_of).collect();
            racks.dedup();
            let name = |r: u32| {
                let n = t.racks.get(r as usize).map(String::as_str).unwrap_or("");
                if n.is_empty() {
                    "(no rack)".to_string()
                } else {
                    n.to_string()
                }
            };
            let group = |per_row: usize| -> (Vec<Option<usize>>, Vec<String>) {
                let mut unit = vec![None; n_nodes];
                let mut labels: Vec<String> = Vec::new();
                let mut firsts: Vec<u32> = Vec::new();
                // The row of each rack seen so far, by rack index (a lookup, not a search:
                // 100,000 nodes in 25,000 racks took 20 s searching a list).
                let mut rack_row: std::collections::HashMap<u32, usize> = Default::default();
                for n in (0..n_nodes).filter(|&n| shown(n)) {
                    let r = rack_of(n);
                    let row = match rack_row.get(&r) {
                        Some(row) => *row,
                        None => {
                            let k = rack_row.len() / per_row;
                            if k == labels.len() {
                                labels.push(name(r));
                                firsts.push(r);
                            } else {
                                labels[k] = format!("{}–{}", name(firsts[k]), name(r));
                            }
                            rack_row.insert(r, k);
                            k
                        }
                    };
                    unit[n] = Some(row);
                }
                (unit, labels)
            };
            // The fewest racks per row that fit (rows double at most with CPU rows).
            let mut per_row = racks.len().div_ceil(max).max(1);
            let (mut unit, mut labels) = group(per_row);
            while count(&unit, labels.len()) > max && per_row < racks.len() {
                per_row += 1;
                (unit, labels) = group(per_row);
            }
            (
                if per_row > 1 { "rack group" } else { "rack" },
                unit,
                labels,
            )
        }
    };
    let units = labels.len();
    let row_of: Vec<usize> = t
        .device_node
        .iter()
        .map(|n| unit[*n as usize].unwrap_or(0))
        .collect();
    let mut size = vec![0usize; units];
    for r in &row_of {
        size[*r] += 1;
    }
    // Device-seconds per (row, bin, kind), each device weighted by 1 / its row's devices.
    let bins = TIMELINE_BINS;
    let res = bin_width(t_end);
    let mut time = vec![vec![[0.0f64; 4]; bins]; units];
    let mut per_set: Vec<Option<Vec<(usize, f64)>>> = vec![None; t.sets.len()];
    for s in &t.spans {
        let weights = per_set[s.set as usize].get_or_insert_with(|| {
            let mut w: Vec<(usize, f64)> = Vec::new();
            for &d in &t.sets[s.set as usize] {
                let row = row_of[d as usize];
                match w.iter_mut().find(|x| x.0 == row) {
                    Some(x) => x.1 += 1.0,
                    None => w.push((row, 1.0)),
                }
            }
            for x in &mut w {
                x.1 /= size[x.0] as f64;
            }
            w
        });
        let k = SpanKind::ALL
            .iter()
            .position(|x| *x == kind(s.kind))
            .unwrap_or(0);
        add(&mut time, weights, k, s.start, s.end, res);
    }
    let mut cpu = cpu_rows(t, t_end, &has_cpu, |n| unit[n], &|u| labels[u].clone());
    let mut rows = Vec::new();
    for (u, ((label, bins), n)) in labels.iter().zip(&time).zip(&size).enumerate() {
        if *n > 0 {
            rows.push(TimelineRow {
                label: format!("{label} ({n} devices)"),
                spans: join(slices(bins, res, t_end)),
            });
        }
        if let Some(row) = cpu.remove(&u) {
            rows.push(row);
        }
    }
    let cpu_rows = rows.len() - size.iter().filter(|n| **n > 0).count();
    Rows {
        rows,
        per,
        devices,
        nodes: dev_nodes,
        cpu_rows,
    }
}

/// Width of a bin of [`TIMELINE_BINS`] over `[0, t_end]`.
fn bin_width(t_end: f64) -> f64 {
    if t_end > 0.0 {
        t_end / TIMELINE_BINS as f64
    } else {
        1.0
    }
}

/// Adds `[start, end)` to kind `k` of the bins it overlaps, on each weighted row.
fn add(
    time: &mut [Vec<[f64; 4]>],
    weights: &[(usize, f64)],
    k: usize,
    start: f64,
    end: f64,
    res: f64,
) {
    let bins = TIMELINE_BINS;
    let first = ((start / res).floor().max(0.0) as usize).min(bins - 1);
    let last = ((end / res).ceil().max(0.0) as usize).min(bins);
    // `b` is a bin of every weighted row (and sets the bin's bounds), not one slice's
    // index: a range loop says so more plainly than zipped iterators would.
    #[allow(clippy::needless_range_loop)]
    for b in first..last {
        let (lo, hi) = (b as f64 * res, (b + 1) as f64 * res);
        let overlap = (end.min(hi) - start.max(lo)).max(0.0);
        for &(row, w) in weights {
            time[row][b][k] += overlap * w;
        }
    }
}

/// The CPU rows, by unit (`unit_of` a node: the node itself, or its rack's row): each bin's
/// share of the unit's CPU-time that its nodes' CPU spans filled (compute), labelled
/// `UNIT CPU (N CPUs)` with the CPUs of its nodes that had CPU work.
fn cpu_rows(
    t: &Timeline,
    t_end: f64,
    has_cpu: &[bool],
    unit_of: impl Fn(usize) -> Option<usize>,
    label: &dyn Fn(usize) -> String,
) -> std::collections::BTreeMap<usize, TimelineRow> {
    let mut cpus: std::collections::BTreeMap<usize, f64> = std::collections::BTreeMap::new();
    for (n, _) in has_cpu.iter().enumerate().filter(|(_, x)| **x) {
        if let Some(u) = unit_of(n) {
            *cpus.entry(u).or_insert(0.0) += t.node_cpus.get(n).copied().unwrap_or(0.0);
        }
    }
    let index: Vec<usize> = cpus.keys().copied().collect();
    let res = bin_width(t_end);
    let mut time = vec![vec![[0.0f64; 4]; TIMELINE_BINS]; index.len()];
    for s in &t.cpu_spans {
        let Some(u) = unit_of(s.node as usize) else {
            continue;
        };
        let Ok(row) = index.binary_search(&u) else {
            continue;
        };
        let total = cpus[&u];
        if total > 0.0 {
            add(&mut time, &[(row, s.cpus / total)], 0, s.start, s.end, res);
        }
    }
    index
        .iter()
        .zip(&time)
        .map(|(u, bins)| {
            let row = TimelineRow {
                label: format!("{} CPU ({} CPUs)", label(*u), plot::fmt_num(cpus[u])),
                spans: join(slices(bins, res, t_end)),
            };
            (*u, row)
        })
        .collect()
}

/// One row per device, each with its spans (one pass over the spans); back-to-back spans of
/// the same kind joined, busy rows binned.
fn device_rows(t: &Timeline, t_end: f64) -> Vec<TimelineRow> {
    let mut rows: Vec<TimelineRow> = t
        .devices
        .iter()
        .map(|d| TimelineRow {
            label: d.clone(),
            spans: Vec::new(),
        })
        .collect();
    for s in &t.spans {
        for &d in &t.sets[s.set as usize] {
            if let Some(row) = rows.get_mut(d as usize) {
                row.spans.push(plot::Span {
                    start: s.start,
                    end: s.end,
                    kind: kind(s.kind),
                });
            }
        }
    }
    for row in &mut rows {
        row.spans.sort_by(|a, b| a.start.total_cmp(&b.start));
        row.spans = join(std::mem::take(&mut row.spans));
        if row.spans.len() > EXACT_SPANS && t_end > 0.0 {
            row.spans = join(binned(&row.spans, t_end));
        }
    }
    rows
}

/// Joins back-to-back spans of the same kind (sorted by start).
fn join(spans: Vec<plot::Span>) -> Vec<plot::Span> {
    let mut out: Vec<plot::Span> = Vec::with_capacity(spans.len());
    for s in spans {
        match out.last_mut() {
            Some(l) if l.kind == s.kind && l.end == s.start => l.end = s.end,
            _ => out.push(s),
        }
    }
    out
}

/// The row at [`TIMELINE_BINS`] bins over `[0, t_end]`.
fn binned(spans: &[plot::Span], t_end: f64) -> Vec<plot::Span> {
    let res = t_end / TIMELINE_BINS as f64;
    let mut time = vec![[0.0f64; 4]; TIMELINE_BINS];
    for s in spans {
        let k = SpanKind::ALL.iter().position(|x| *x == s.kind).unwrap_or(0);
        let first = ((s.start / res).floor().max(0.0) as usize).min(TIMELINE_BINS - 1);
        let last = ((s.end / res).ceil().max(0.0) as usize).min(TIMELINE_BINS);
        for (b, bin) in time.iter_mut().enumerate().take(last).skip(first) {
            let (lo, hi) = (b as f64 * res, (b + 1) as f64 * res);
            bin[k] += (s.end.min(hi) - s.start.max(lo)).max(0.0);
        }
    }
    slices(&time, res, t_end)
}

/// Bins of `res` seconds, each as consecutive slices of each kind's time in it (cut at the
/// bin's end and at `t_end`).
fn slices(time: &[[f64; 4]], res: f64, t_end: f64) -> Vec<plot::Span> {
    let mut out = Vec::new();
    for (b, bin) in time.iter().enumerate() {
        let mut at = b as f64 * res;
        for (k, share) in bin.iter().enumerate() {
            if *share > 0.0 {
                let end = (at + share).min(((b + 1) as f64 * res).min(t_end));
                if end > at {
                    out.push(plot::Span {
                        start: at,
                        end,
                        kind: SpanKind::ALL[k],
                    });
                }
                at = end;
            }
        }
    }
    out
}

/// `timeline.csv`: `device,start_s,end_s,kind` (the first column named after what a row is:
/// `device`, `node`, `rack`, `rack_group`), the spans of each plotted row (see
/// [`timeline_rows`]), rows in cluster order.
pub fn timeline_csv(r: &Rows) -> String {
    let mut o = format!("{},start_s,end_s,kind\n", r.per.replace(' ', "_"));
    for row in &r.rows {
        for s in &row.spans {
            let label = if row.label.contains([',', '"']) {
                format!("\"{}\"", row.label.replace('"', "\"\""))
            } else {
                row.label.clone()
            };
            let _ = writeln!(o, "{label},{},{},{}", s.start, s.end, s.kind.name());
        }
    }
    o
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn busy_rows_keep_each_kinds_share_of_every_bin() {
        // 1,500 steps of 0.87 s compute + 0.13 s communication: far over EXACT_SPANS, so the
        // row is binned (10 steps a bin); every bin must still be 87 % compute and 13 %
        // communication.
        let mut spans = Vec::new();
        for i in 0..1500 {
            let t = i as f64;
            spans.push(plot::Span {
                start: t,
                end: t + 0.87,
                kind: SpanKind::Compute,
            });
            spans.push(plot::Span {
                start: t + 0.87,
                end: t + 1.0,
                kind: SpanKind::Communication,
            });
        }
        let out = binned(&spans, 1500.0);
        let total = |k: SpanKind| -> f64 {
            out.iter()
                .filter(|s| s.kind == k)
                .map(|s| s.end - s.start)
                .sum()
        };
        assert!((total(SpanKind::Compute) - 1305.0).abs() < 1e-6);
        assert!((total(SpanKind::Communication) - 195.0).abs() < 1e-6);
        let res = 1500.0 / TIMELINE_BINS as f64;
        let first_comm: f64 = out
            .iter()
            .filter(|s| s.kind == SpanKind::Communication && s.start < res)
            .map(|s| s.end - s.start)
            .sum();
        assert!((first_comm / res - 0.13).abs() < 1e-9, "{first_comm}");
    }

    /// A timeline of `nodes` nodes of `per` devices in racks of `rack` nodes, where device
    /// `d` computed over `[0, busy(d))`.
    fn cluster(nodes: u32, per: u32, rack: u32, busy: impl Fn(u32) -> f64) -> Timeline {
        let mut t = Timeline::default();
        for n in 0..nodes {
            t.nodes.push(format!("n{n}"));
            t.node_rack.push(n / rack);
            for d in 0..per {
                t.devices.push(format!("n{n}.d{d}"));
                t.device_node.push(n);
            }
        }
        t.racks = (0..nodes.div_ceil(rack)).map(|r| format!("r{r}")).collect();
        t.labels.push("w.t".into());
        for d in 0..nodes * per {
            if busy(d) > 0.0 {
                t.sets.push(vec![d]);
                t.spans.push(crate::sim::timeline::Span {
                    set: t.sets.len() as u32 - 1,
                    start: 0.0,
                    end: busy(d),
                    kind: SimKind::Compute,
                    label: 0,
                    step: None,
                });
            }
        }
        t
    }

    fn busy_time(row: &TimelineRow) -> f64 {
        row.spans.iter().map(|s| s.end - s.start).sum()
    }

    #[test]
    fn small_clusters_show_every_device() {
        let t = cluster(8, 8, 4, |_| 1.0);
        let r = timeline_rows(&t, 10.0);
        assert_eq!(
            (r.per, r.rows.len(), r.devices, r.nodes),
            ("device", 64, 64, 8)
        );
        assert_eq!(r.rows[63].label, "n7.d7");
        assert_eq!(r.describe(), "64 devices, one row each");
    }

    #[test]
    fn large_clusters_aggregate_per_node_then_per_rack() {
        // 10 nodes of 8: per node. Node 0's devices all busy 10 s, node 1's half of them:
        // node 0's row is busy the whole run, node 1's half of it.
        let t = cluster(10, 8, 5, |d| {
            if d < 8 || (8..12).contains(&d) {
                10.0
            } else {
                0.0
            }
        });
        let r = timeline_rows(&t, 10.0);
        assert_eq!(
            (r.per, r.rows.len(), r.devices, r.nodes),
            ("node", 10, 80, 10)
        );
        assert_eq!(r.rows[0].label, "n0 (8 devices)");
        assert!((busy_time(&r.rows[0]) - 10.0).abs() < 1e-9);
        assert!((busy_time(&r.rows[1]) - 5.0).abs() < 1e-9);
        assert_eq!(busy_time(&r.rows[2]), 0.0);
        assert!(
            r.describe()
                .contains("80 devices on 10 nodes, one row per node (10 rows)")
        );
        // 200 nodes of 1 in racks of 10: 20 racks, one row each, every device counted.
        let t = cluster(200, 1, 10, |d| if d < 10 { 4.0 } else { 0.0 });
        let r = timeline_rows(&t, 8.0);
        assert_eq!((r.per, r.rows.len()), ("rack", 20));
        assert_eq!(r.rows[0].label, "r0 (10 devices)");
        assert!((busy_time(&r.rows[0]) - 4.0).abs() < 1e-9);
        // 2,000 racks of 1: runs of 32 consecutive racks (63 rows), labelled first–last.
        let t = cluster(2000, 1, 1, |_| 1.0);
        let r = timeline_rows(&t, 1.0);
        assert_eq!((r.per, r.rows.len()), ("rack group", 63));
        assert_eq!(r.rows[0].label, "r0–r31 (32 devices)");
        assert_eq!(r.rows[62].label, "r1984–r1999 (16 devices)");
        let csv = timeline_csv(&r);
        assert!(csv.starts_with("rack_group,start_s,end_s,kind\n"));
    }

    #[test]
    fn two_hundred_thousand_racks_group_in_linear_time() {
        // Each node's rack was searched for in the list of racks seen so far: 2 × 10¹⁰ steps
        // here (100,000 DGX nodes in 25,000 racks took 24 s to plot). A lookup, well under a
        // second; only a hang fails.
        let t = cluster(200_000, 1, 1, |d| if d == 0 { 1.0 } else { 0.0 });
        let r = timeline_rows(&t, 1.0);
        assert_eq!(r.per, "rack group");
        assert_eq!(r.devices, 200_000);
        assert!(
            r.rows.len() <= crate::plot::MAX_TIMELINE_ROWS,
            "{}",
            r.rows.len()
        );
        assert!(r.rows[0].label.starts_with("r0–"), "{}", r.rows[0].label);
    }
}
