//! Validation of a profile's hardware evidence (schema 5): the device-pair copy matrix and
//! the records of `orrery validate --record`. Part of `load::validate`; every problem located
//! by its key path.

use super::load::{Checker, Key};
use super::schema::Profile;

use Key::{Index as I, Name as N};

/// Link kinds a `[[p2p_matrix]]` entry may name.
pub const LINKS: &[&str] = &["nvlink", "xgmi", "pcie", "none", "unknown"];

pub(super) fn validate(c: &mut Checker, p: &Profile) {
    let v5 = |c: &mut Checker, at: &[Key], what: &str| {
        if p.schema_version < 5 {
            c.err(at, format!("{what} needs `schema_version = 5`"));
        }
    };
    let mut seen = std::collections::BTreeSet::new();
    for (i, e) in p.p2p_matrix.iter().enumerate() {
        let at = |k| [N("p2p_matrix"), I(i), N(k)];
        if i == 0 {
            v5(c, &[N("p2p_matrix")], "`[[p2p_matrix]]`");
        }
        if e.from == e.to {
            c.err(&at("to"), "a `p2p_matrix` copy joins two different devices");
        }
        if !seen.insert((e.from, e.to)) {
            c.err(
                &at("to"),
                format!("the pair {} → {} is listed twice", e.from, e.to),
            );
        }
        if e.bytes == 0 {
            c.err(&at("bytes"), "`bytes` must be at least 1");
        }
        c.positive(
            &at("bandwidth_bytes_per_s"),
            "`bandwidth_bytes_per_s`",
            e.bandwidth_bytes_per_s,
        );
        if !LINKS.contains(&e.link.as_str()) {
            c.err(
                &at("link"),
                format!("unknown link `{}` ({})", e.link, LINKS.join(", ")),
            );
        }
    }
    for (i, r) in p.validation.iter().enumerate() {
        let at = |k| [N("validation"), I(i), N(k)];
        if i == 0 {
            v5(c, &[N("validation")], "`[[validation]]`");
        }
        for (k, v) in [
            ("date", &r.date),
            ("host", &r.host),
            ("node_type", &r.node_type),
            ("scenario", &r.scenario),
            ("orrery_version", &r.orrery_version),
        ] {
            c.text(&at(k), &format!("`{k}`"), v);
        }
        if r.matched + r.mismatches + r.unknown == 0 {
            c.err(
                &at("matched"),
                "a validation record counts at least one check",
            );
        }
    }
}
