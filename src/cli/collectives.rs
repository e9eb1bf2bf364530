//! `orrery collectives`.

use super::common::load;
use std::path::Path;
use std::process::ExitCode;

pub(super) struct Choices<'a> {
    pub(super) op: &'a str,
    pub(super) algo: Option<&'a str>,
    pub(super) proto: Option<&'a str>,
    pub(super) ranks: Option<&'a str>,
    pub(super) sizes: &'a str,
    pub(super) csv: bool,
}

pub(super) fn collectives(file: &Path, c: Choices) -> ExitCode {
    use orrery::experiment::collectives as ec;
    let l = match load(Some(file)) {
        Ok(l) => l,
        Err(code) => return code,
    };
    let spec = l.spec.as_ref().expect("no errors means a spec");
    let r = (|| {
        let op = ec::parse_op(c.op).map_err(|e| format!("--op: {e}"))?;
        let algo = c
            .algo
            .map(ec::parse_algorithm)
            .transpose()
            .map_err(|e| format!("--algo: {e}"))?;
        let proto = c
            .proto
            .map(|p| {
                orrery::network::collective::Protocol::parse(p)
                    .ok_or_else(|| format!("`{p}` is not a protocol: ll, ll128 or simple"))
            })
            .transpose()
            .map_err(|e| format!("--proto: {e}"))?;
        let sizes = ec::parse_sizes(c.sizes).map_err(|e| format!("--sizes: {e}"))?;
        let sel = match c.ranks {
            Some(s) => s.to_string(),
            None => ec::default_ranks(spec)?,
        };
        let (ranks, policy) = ec::place_ranks(spec, &sel).map_err(|e| format!("--ranks: {e}"))?;
        ec::table(spec, op, algo, proto, ranks, policy, &sizes)
    })();
    match r {
        Ok(t) if c.csv => {
            out!("{}", t.csv());
            ExitCode::SUCCESS
        }
        Ok(t) => {
            outln!(
                "orrery {} · scenario {} · hash {}",
                env!("CARGO_PKG_VERSION"),
                file.display(),
                orrery::scenario_hash(&l.sources)
            );
            out!("{t}");
            ExitCode::SUCCESS
        }
        Err(e) => {
            errln!("error: {e}");
            ExitCode::from(2)
        }
    }
}
