//! Validation of a profile's fitted paths: transfer paths and collectives (α–β segments,
//! raw medians, held-out errors) and the provenance rules of imported profiles. Part of
//! `load::validate`; every problem located by its key path.

use super::load::{Checker, Key, check_figure};
use super::schema::{COLLECTIVE_OPS, Holdout, Profile, Segment, Source, TRANSFER_PATHS};

use Key::{Index as I, Name as N};

pub(super) fn validate(c: &mut Checker, p: &Profile) {
    let pv = &p.provenance;
    let v4 = |c: &mut Checker, at: &[Key], what: &str| {
        if p.schema_version < 4 {
            c.err(at, format!("{what} needs `schema_version = 4`"));
        }
    };
    if pv.source == Source::Imported {
        v4(
            c,
            &[N("provenance"), N("source")],
            "`source = \"imported\"`",
        );
        if pv.imports.is_empty() {
            c.err(
                &[N("provenance"), N("source")],
                "an imported profile lists the files it was fitted from in `[[provenance.imports]]`",
            );
        }
    }
    for (i, r) in pv.imports.iter().enumerate() {
        let at = |k| [N("provenance"), N("imports"), I(i), N(k)];
        v4(c, &[N("provenance"), N("imports")], "`provenance.imports`");
        c.text(&at("file"), "`file`", &r.file);
        if !["nccl-tests", "rccl-tests", "nvbandwidth", "perftest"].contains(&r.tool.as_str()) {
            c.err(
                &at("tool"),
                format!(
                    "unknown tool `{}` (nccl-tests, rccl-tests, nvbandwidth, perftest)",
                    r.tool
                ),
            );
        }
        c.text(&at("file_date"), "`file_date`", &r.file_date);
        if r.fnv1a64.len() != 16 || !r.fnv1a64.bytes().all(|b| b.is_ascii_hexdigit()) {
            c.err(&at("fnv1a64"), "`fnv1a64` is 16 hex digits");
        }
    }

    let measured = pv.source.is_measurement();
    for (ti, t) in p.transfer.iter().enumerate() {
        let at = |k| [N("transfer"), I(ti), N(k)];
        if !TRANSFER_PATHS.contains(&t.path.as_str()) {
            let help = crate::diag::did_you_mean(&t.path, TRANSFER_PATHS.iter().copied())
                .unwrap_or_else(|| format!("paths: {}", TRANSFER_PATHS.join(", ")));
            c.err_help(
                &at("path"),
                format!("unknown transfer path `{}`", t.path),
                help,
            );
        }
        if p.transfer[..ti].iter().any(|o| o.path == t.path) {
            c.err(
                &at("path"),
                format!("transfer path `{}` is given twice", t.path),
            );
        }
        c.text(&at("source"), "`source`", &t.source);
        let base = [N("transfer"), I(ti)];
        segments(c, &base, &t.segments, measured, &t.path);
        medians(c, &base, &t.medians, measured);
        if let Some(k) = &t.check {
            check_figure(c, p.schema_version, ti, k);
        }
        if let Some(h) = &t.holdout {
            v4(c, &at("holdout"), "a transfer path's `holdout`");
            holdout(c, &[N("transfer"), I(ti), N("holdout")], h);
        }
    }

    for (ci, f) in p.collective.iter().enumerate() {
        let base = [N("collective"), I(ci)];
        let at = |k| [N("collective"), I(ci), N(k)];
        v4(c, &base, "`[[collective]]`");
        if !COLLECTIVE_OPS.contains(&f.op.as_str()) {
            let help = crate::diag::did_you_mean(&f.op, COLLECTIVE_OPS.iter().copied())
                .unwrap_or_else(|| format!("ops: {}", COLLECTIVE_OPS.join(", ")));
            c.err_help(&at("op"), format!("unknown collective `{}`", f.op), help);
        }
        if f.ranks < 2 {
            c.err(&at("ranks"), "a collective fit needs at least 2 ranks");
        }
        if f.nodes < 1 || f.nodes > f.ranks {
            c.err(
                &at("nodes"),
                format!("`nodes` must be between 1 and `ranks` ({})", f.ranks),
            );
        }
        if !["out_of_place", "in_place"].contains(&f.placement.as_str()) {
            c.err(
                &at("placement"),
                "`placement` is `out_of_place` or `in_place`",
            );
        }
        let dup = p.collective[..ci]
            .iter()
            .any(|o| o.op == f.op && o.ranks == f.ranks && o.nodes == f.nodes);
        if dup {
            c.err(
                &at("op"),
                format!(
                    "`{}` on {} ranks over {} nodes is given twice",
                    f.op, f.ranks, f.nodes
                ),
            );
        }
        c.text(&at("source"), "`source`", &f.source);
        segments(c, &base, &f.segments, true, &f.op);
        medians(c, &base, &f.medians, true);
        if let Some(h) = &f.holdout {
            holdout(c, &[N("collective"), I(ci), N("holdout")], h);
        }
    }
}

/// Contiguous α–β segments from 0, each figure inside its interval.
fn segments(c: &mut Checker, base: &[Key], segs: &[Segment], measured: bool, what: &str) {
    let with = |k: Key<'static>| {
        let mut v = base.to_vec();
        v.push(k);
        v
    };
    if segs.is_empty() {
        c.err(base, format!("`{what}` has no segments"));
    }
    let mut expect_min = 0u64;
    for (si, s) in segs.iter().enumerate() {
        let at = |k| {
            let mut v = with(N("segments"));
            v.push(I(si));
            v.push(N(k));
            v
        };
        if s.min_bytes != expect_min {
            c.err(
                &at("min_bytes"),
                format!(
                    "segments must be contiguous from 0: expected `min_bytes = {expect_min}`, found {}",
                    s.min_bytes
                ),
            );
        }
        match s.max_bytes {
            Some(mx) if mx <= s.min_bytes => c.err(
                &at("max_bytes"),
                format!("`max_bytes` {mx} is not above `min_bytes` {}", s.min_bytes),
            ),
            Some(mx) => expect_min = mx,
            None if si + 1 < segs.len() => c.err(
                &at("min_bytes"),
                "only the last segment may leave out `max_bytes`",
            ),
            None => {}
        }
        if c.finite(&at("latency_s"), "`latency_s`", s.latency_s) && s.latency_s < 0.0 {
            c.err(&at("latency_s"), "`latency_s` must not be negative");
        }
        c.interval(&at("latency_ci95"), s.latency_s, s.latency_ci95);
        c.positive(
            &at("bandwidth_bytes_per_s"),
            "`bandwidth_bytes_per_s`",
            s.bandwidth_bytes_per_s,
        );
        c.interval(
            &at("bandwidth_ci95"),
            s.bandwidth_bytes_per_s,
            s.bandwidth_ci95,
        );
        match s.r2 {
            Some(r) if !(0.0..=1.0).contains(&r) => {
                c.err(&at("r2"), format!("`r2` must be in [0, 1], found {r}"))
            }
            None if measured => {
                let mut v = with(N("segments"));
                v.push(I(si));
                c.err(
                    &v,
                    "a measured or imported fit needs `r2` for every segment",
                );
            }
            _ => {}
        }
    }
}

/// Raw `[bytes, seconds]` medians by increasing size; required of measured fits.
fn medians(c: &mut Checker, base: &[Key], meds: &[[f64; 2]], measured: bool) {
    if measured && meds.is_empty() {
        c.err(base, "a measured or imported fit needs its raw `medians`");
    }
    let mut last = 0.0;
    for (mi, md) in meds.iter().enumerate() {
        let mut path = base.to_vec();
        path.push(N("medians"));
        path.push(I(mi));
        if !(md[0].is_finite() && md[1].is_finite() && md[0] > 0.0 && md[1] > 0.0) {
            c.err(
                &path,
                "a median is `[bytes, seconds]`, both greater than zero",
            );
        } else if md[0] <= last {
            c.err(&path, "medians must be in order of increasing size");
        }
        last = md[0];
    }
}

fn holdout(c: &mut Checker, at: &[Key], h: &Holdout) {
    if h.sizes_bytes.is_empty() {
        let mut v = at.to_vec();
        v.push(N("sizes_bytes"));
        c.err(&v, "`sizes_bytes` lists the held-out sizes");
    }
    for (k, x) in [
        ("median_abs_rel_error", h.median_abs_rel_error),
        ("max_abs_rel_error", h.max_abs_rel_error),
    ] {
        let mut v = at.to_vec();
        v.push(N(k));
        if !(x.is_finite() && x >= 0.0) {
            c.err(&v, format!("`{k}` must be a finite fraction, at least 0"));
        }
    }
    if h.max_abs_rel_error < h.median_abs_rel_error {
        c.err(at, "`max_abs_rel_error` is below `median_abs_rel_error`");
    }
}
