//! Maturity tiers, computed from evidence (never declared above what the evidence shows):
//!
//! | tier | evidence |
//! |---|---|
//! | `estimated` | figures are Orrery's estimates (`tier estimated`) |
//! | `datasheet` | vendor figures only: no profile, or a datasheet-derived one |
//! | `calibrated` | a measured or imported profile is named (`profile NAME`) |
//! | `validated` | calibrated, *and* every held-out prediction the profile records is within [`HOLDOUT_BOUND`], *and* the newest `orrery validate --record` made on a host the profile was measured on found no mismatch |
//!
//! Held-out predictions are the `holdout` of transfer paths and collectives (sizes held back
//! from the fit, `calibrate import`) and the `check` of transfer paths (a chain of unseen sizes,
//! `calibrate --check`); a profile with none cannot be validated. The host rule ties the
//! validation to the hardware the profile came from: a profile measured on `node-17` is not
//! validated by a run of `validate` on `node-42`.
//!
//! Architecture invariant: reads a spec and its profiles; knows nothing of simulation.

use crate::profile::Profile;
use crate::scenario::Spec;
use crate::scenario::hardware::{Accelerator, Tier};
use serde::Serialize;
use std::collections::BTreeMap;

/// Largest median |predicted − measured| / measured of any held-out prediction of a
/// validated profile: 10 %, a bound Orrery chooses (no source sets one). It admits the
/// run-to-run noise of the fixtures' noise model (±2 %, tests/fixtures/import/README.md)
/// several times over, and refuses a fit off by more than a tenth.
pub const HOLDOUT_BOUND: f64 = 0.10;

/// One accelerator's tier and why.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Maturity {
    pub accelerator: String,
    pub tier: Tier,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub profile: Option<String>,
    /// The evidence, in words (what was found and what is missing for the next tier).
    pub evidence: String,
}

impl Maturity {
    /// `H200 validated (profile h200_node17: ...)`.
    pub fn line(&self) -> String {
        format!(
            "{} {} ({})",
            self.accelerator,
            self.tier.as_str(),
            self.evidence
        )
    }
}

fn pct(x: f64) -> String {
    format!("{:.1}%", 100.0 * x)
}

/// The held-out errors a profile records: (what, median |relative error|).
pub fn heldout(p: &Profile) -> Vec<(String, f64)> {
    let mut v = Vec::new();
    for t in &p.transfer {
        if let Some(h) = &t.holdout {
            v.push((t.path.clone(), h.median_abs_rel_error));
        }
        if let Some(c) = &t.check {
            v.push((format!("{} check", t.path), c.rel_error.abs()));
        }
    }
    for c in &p.collective {
        if let Some(h) = &c.holdout {
            v.push((
                format!("{} {}×{}", c.op, c.ranks, c.nodes),
                h.median_abs_rel_error,
            ));
        }
    }
    v
}

/// Whether the profile's hardware passed `validate`, and what was found.
fn validation(p: &Profile) -> Result<String, String> {
    let hosts: Vec<&str> = p.provenance.host.split(", ").map(str::trim).collect();
    let newest = p
        .validation
        .iter()
        .enumerate()
        .filter(|(_, r)| hosts.contains(&r.host.as_str()))
        .max_by(|(i, a), (j, b)| a.date.cmp(&b.date).then(i.cmp(j)))
        .map(|(_, r)| r);
    match newest {
        None if p.validation.is_empty() => Err("no `orrery validate --record` run recorded".into()),
        None => Err(format!(
            "validate was recorded only on other hosts than the profile's ({})",
            p.provenance.host
        )),
        Some(r) if r.mismatches > 0 => Err(format!(
            "the newest validate on {} ({}) found {} mismatch{}",
            r.host,
            r.date,
            r.mismatches,
            if r.mismatches == 1 { "" } else { "es" }
        )),
        Some(r) if r.matched == 0 => {
            Err(format!("the newest validate on {} matched nothing", r.host))
        }
        Some(r) => Ok(format!("validated on {} {}", r.host, r.date)),
    }
}

/// The tier of `acc`, given the scenario's loaded profiles.
pub fn of(acc: &Accelerator, profiles: &BTreeMap<String, Profile>) -> Maturity {
    let declared = |evidence: String| Maturity {
        accelerator: acc.name.clone(),
        tier: acc.tier,
        profile: acc.profile.clone(),
        evidence,
    };
    let figures = match acc.tier {
        Tier::Estimated => "figures are estimates",
        _ => "datasheet figures",
    };
    let Some(name) = &acc.profile else {
        return declared(format!("{figures}, no calibration profile"));
    };
    let Some(p) = profiles.get(name) else {
        return declared(format!("{figures}; profile {name} not loaded"));
    };
    if !p.provenance.source.is_measurement() {
        return declared(format!("profile {name} is datasheet-derived"));
    }
    let made = format!(
        "profile {name}, {} on {} {}",
        p.provenance.source.as_str(),
        p.provenance.host,
        p.provenance.date
    );
    let errs = heldout(p);
    let worst = errs
        .iter()
        .max_by(|a, b| a.1.total_cmp(&b.1).then(b.0.cmp(&a.0)));
    let accuracy = match worst {
        None => Err("no held-out prediction recorded".to_string()),
        Some((what, e)) if *e > HOLDOUT_BOUND => Err(format!(
            "held-out error {} on {what} exceeds {}",
            pct(*e),
            pct(HOLDOUT_BOUND)
        )),
        Some((what, e)) => Ok(format!(
            "held-out error ≤ {} over {} prediction{} (worst {what})",
            pct(*e),
            errs.len(),
            if errs.len() == 1 { "" } else { "s" }
        )),
    };
    let (tier, evidence) = match (accuracy, validation(p)) {
        (Ok(a), Ok(v)) => (Tier::Validated, format!("{made}; {a}; {v}")),
        (Ok(a), Err(v)) => (Tier::Calibrated, format!("{made}; {a}; not validated: {v}")),
        (Err(a), Ok(v)) => (Tier::Calibrated, format!("{made}; {v}; not validated: {a}")),
        (Err(a), Err(v)) => (Tier::Calibrated, format!("{made}; not validated: {a}; {v}")),
    };
    Maturity {
        accelerator: acc.name.clone(),
        tier,
        profile: Some(name.clone()),
        evidence,
    }
}

/// The tiers of the accelerators the scenario's cluster has (every declared accelerator
/// with a device in some node type when there is no cluster), by name.
pub fn of_spec(spec: &Spec) -> Vec<Maturity> {
    let mut names: Vec<&str> = match &spec.cluster {
        Some(c) if !c.groups.is_empty() => c
            .groups
            .iter()
            .filter_map(|g| spec.node_types.get(&g.node_type))
            .flat_map(|nt| nt.devices.iter().map(|d| d.accelerator.as_str()))
            .collect(),
        _ => Vec::new(),
    };
    names.sort_unstable();
    names.dedup();
    names
        .into_iter()
        .filter_map(|n| spec.accelerators.get(n))
        .map(|a| of(a, &spec.profiles))
        .collect()
}

/// A warning when scenarios compared against each other price their devices at different
/// tiers: `(scenario, tiers)` pairs.
pub fn mixed(entries: &[(&str, &[Maturity])]) -> Option<String> {
    let mut tiers: Vec<Tier> = entries
        .iter()
        .flat_map(|(_, m)| m.iter().map(|m| m.tier))
        .collect();
    tiers.sort();
    tiers.dedup();
    if tiers.len() < 2 {
        return None;
    }
    let each: Vec<String> = entries
        .iter()
        .map(|(name, m)| {
            let t: Vec<String> = m
                .iter()
                .map(|m| format!("{} {}", m.accelerator, m.tier.as_str()))
                .collect();
            format!(
                "{name}: {}",
                if t.is_empty() {
                    "no devices".into()
                } else {
                    t.join(", ")
                }
            )
        })
        .collect();
    Some(format!(
        "the compared hardware is priced at different maturity tiers ({}): a difference may come from the evidence, not the hardware",
        each.join("; ")
    ))
}
