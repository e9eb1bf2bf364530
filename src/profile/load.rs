//! Reading a profile's text: TOML syntax, the schema version (checked first, so a newer
//! profile is reported as newer rather than as a pile of unknown fields), the typed schema,
//! then the figures themselves (ranges, intervals that hold their value, contiguous size
//! segments). Every problem carries the byte range it is about; `scenario::load`, which found and
//! read the file, turns them into located diagnostics. No file system access here.

use super::schema::{PredictionCheck, Profile, SCHEMA_VERSION};
use crate::units::DTYPES;
use std::ops::Range;
use toml::Spanned;
use toml::de::{DeTable, DeValue};

/// One problem in a profile, located by byte range in its text.
#[derive(Debug, Clone, PartialEq)]
pub struct ProfileError {
    pub span: Range<usize>,
    pub message: String,
    pub help: Option<String>,
}

impl ProfileError {
    fn new(span: Range<usize>, message: impl Into<String>) -> Self {
        ProfileError {
            span,
            message: message.into(),
            help: None,
        }
    }
    fn help(mut self, h: impl Into<String>) -> Self {
        self.help = Some(h.into());
        self
    }
}

/// Parse and validate a profile. All semantic problems are reported, not only the first.
pub fn parse(text: &str) -> Result<Profile, Vec<ProfileError>> {
    let root = DeTable::parse(text).map_err(|e| vec![toml_error(&e, text)])?;
    check_version(&root, text.len())?;
    let profile: Profile = toml::from_str(text).map_err(|e| vec![toml_error(&e, text)])?;
    let errs = validate(&profile, &root);
    if errs.is_empty() {
        Ok(profile)
    } else {
        Err(errs)
    }
}

fn toml_error(e: &toml::de::Error, text: &str) -> ProfileError {
    let span = e.span().unwrap_or(0..0);
    let span = span.start.min(text.len())..span.end.min(text.len());
    // The message sometimes ends with a newline and repeats the location; keep the first line.
    let msg = e
        .message()
        .lines()
        .next()
        .unwrap_or("invalid profile")
        .trim();
    let mut err = ProfileError::new(span, msg.to_string());
    if msg.starts_with("missing field") {
        err = err.help("calibration/README.md lists every field of the profile format");
    } else if msg.starts_with("unknown field") {
        err = err.help("a misspelt field, or a field of a newer schema version");
    }
    err
}

fn check_version(root: &Spanned<DeTable>, len: usize) -> Result<(), Vec<ProfileError>> {
    let Some(v) = get(root.get_ref(), "schema_version") else {
        return Err(vec![
            ProfileError::new(0..len.min(1), "missing field `schema_version`").help(format!(
                "the first line of a profile is `schema_version = {SCHEMA_VERSION}`"
            )),
        ]);
    };
    let n = match v.get_ref() {
        // Too many digits for i128 is still a (very) newer version.
        DeValue::Integer(i) => {
            Some(i128::from_str_radix(i.as_str(), i.radix()).unwrap_or(i128::MAX))
        }
        _ => None,
    };
    let err = |m: String| Err(vec![ProfileError::new(v.span(), m)]);
    match n {
        None => err(format!(
            "`schema_version` must be a whole number, found {}",
            v.get_ref().type_str()
        )),
        Some(n) if n > i128::from(SCHEMA_VERSION) => Err(vec![
            ProfileError::new(
                v.span(),
                format!(
                    "profile schema version {n} is newer than this orrery supports (version {SCHEMA_VERSION})"
                ),
            )
            .help("upgrade orrery, or regenerate the profile with this version's `orrery calibrate`"),
        ]),
        Some(n) if n < 1 => err(format!("profile schema version {n} does not exist (versions start at 1)")),
        Some(_) => Ok(()),
    }
}

fn get<'a, 'i>(t: &'a DeTable<'i>, key: &str) -> Option<&'a Spanned<DeValue<'i>>> {
    t.iter().find(|(k, _)| k.get_ref() == key).map(|(_, v)| v)
}

/// A step into the TOML tree.
#[derive(Clone, Copy)]
pub(super) enum Key<'a> {
    Name(&'a str),
    Index(usize),
}

/// Span of the deepest value along `path` (the parent's when the last step is missing).
pub(super) fn span_at(root: &Spanned<DeTable>, path: &[Key]) -> Range<usize> {
    let mut span = root.span();
    let Some((first, rest)) = path.split_first() else {
        return span;
    };
    let Key::Name(n) = first else { return span };
    let Some(mut cur) = get(root.get_ref(), n) else {
        return span;
    };
    span = cur.span();
    for k in rest {
        let next = match (k, cur.get_ref()) {
            (Key::Name(n), DeValue::Table(t)) => get(t, n),
            (Key::Index(i), DeValue::Array(a)) => a.get(*i),
            _ => None,
        };
        match next {
            Some(v) => {
                cur = v;
                span = v.span();
            }
            None => break,
        }
    }
    span
}

pub(super) struct Checker<'a, 'i> {
    root: &'a Spanned<DeTable<'i>>,
    pub(super) errs: Vec<ProfileError>,
}

impl Checker<'_, '_> {
    pub(super) fn err(&mut self, path: &[Key], msg: impl Into<String>) {
        let span = span_at(self.root, path);
        self.errs.push(ProfileError::new(span, msg));
    }

    pub(super) fn err_help(&mut self, path: &[Key], msg: impl Into<String>, help: String) {
        let span = span_at(self.root, path);
        self.errs.push(ProfileError::new(span, msg).help(help));
    }

    pub(super) fn finite(&mut self, path: &[Key], what: &str, x: f64) -> bool {
        if x.is_finite() {
            true
        } else {
            self.err(path, format!("{what} must be a finite number, found {x}"));
            false
        }
    }

    pub(super) fn positive(&mut self, path: &[Key], what: &str, x: f64) {
        if self.finite(path, what, x) && x <= 0.0 {
            self.err(
                path,
                format!("{what} must be greater than zero, found {}", num(x)),
            );
        }
    }

    pub(super) fn efficiency(&mut self, path: &[Key], x: f64) {
        if self.finite(path, "an efficiency", x) && !(x > 0.0 && x <= 1.0) {
            self.err(
                path,
                format!("an efficiency is a fraction of the peak in (0, 1], found {x}"),
            );
        }
    }

    /// `[low, high]` must hold the value it is the interval of.
    pub(super) fn interval(&mut self, path: &[Key], value: f64, ci: [f64; 2]) {
        if !(ci[0].is_finite() && ci[1].is_finite()) {
            self.err(path, "a confidence interval must be two finite numbers");
        } else if !(ci[0] <= value && value <= ci[1]) {
            self.err(
                path,
                format!(
                    "the 95% interval [{}, {}] does not contain its value {}",
                    num(ci[0]),
                    num(ci[1]),
                    num(value)
                ),
            );
        }
    }

    /// An `efficiency_by_size` curve: rows `[min_size, efficiency]`, sizes strictly
    /// decreasing down to 0 (so every size has a row), efficiencies in (0, 1].
    pub(super) fn curve(&mut self, version: u32, path: &[Key], rows: &[[f64; 2]]) {
        if rows.is_empty() {
            return;
        }
        if version < 3 {
            self.err(path, "`efficiency_by_size` needs `schema_version = 3`");
        }
        let mut last = f64::INFINITY;
        for (i, r) in rows.iter().enumerate() {
            let mut at = path.to_vec();
            at.push(Key::Index(i));
            if !(r[0].is_finite() && r[0] >= 0.0 && r[0] < last) {
                self.err(
                    &at,
                    "a row is `[min_size, efficiency]` with `min_size` at least 0 and below the row before",
                );
            }
            self.efficiency(&at, r[1]);
            last = r[0];
        }
        if last != 0.0 {
            self.err(
                path,
                "the last row's `min_size` must be 0, so every size has an efficiency",
            );
        }
    }

    pub(super) fn text(&mut self, path: &[Key], what: &str, s: &str) {
        if s.trim().is_empty() {
            self.err(path, format!("{what} must not be empty"));
        }
    }
}

/// A figure as errors show it: `2.5e-6` rather than `0.0000025`.
pub(super) fn num(x: f64) -> String {
    if x != 0.0 && !(1e-3..1e6).contains(&x.abs()) {
        format!("{x:e}")
    } else {
        format!("{x}")
    }
}

fn validate(p: &Profile, root: &Spanned<DeTable>) -> Vec<ProfileError> {
    use Key::Name as N;
    let mut c = Checker {
        root,
        errs: Vec::new(),
    };
    let pv = &p.provenance;
    for (k, v) in [
        ("accelerator", &pv.accelerator),
        ("device", &pv.device),
        ("date", &pv.date),
        ("command", &pv.command),
    ] {
        c.text(&[N("provenance"), N(k)], &format!("`provenance.{k}`"), v);
    }

    if p.compute.is_empty() && p.schema_version < 4 {
        c.err(
            &[N("compute")],
            "`compute` needs at least one dtype, such as `[compute.bf16]`",
        );
    }
    for (dt, f) in &p.compute {
        let at = |k| [N("compute"), N(dt), N(k)];
        if !DTYPES.contains(&dt.as_str()) {
            let help = crate::diag::did_you_mean(dt, DTYPES.iter().copied())
                .unwrap_or_else(|| format!("dtypes: {}", DTYPES.join(", ")));
            c.errs.push(
                ProfileError::new(
                    span_at(root, &[N("compute"), N(dt)]),
                    format!("unknown dtype `{dt}` in `compute`"),
                )
                .help(help),
            );
        }
        c.positive(&at("peak_flops"), "`peak_flops`", f.peak_flops);
        c.efficiency(&at("efficiency"), f.efficiency);
        c.interval(&at("efficiency_ci95"), f.efficiency, f.efficiency_ci95);
        if let Some(a) = f.achieved_flops {
            c.positive(&at("achieved_flops"), "`achieved_flops`", a);
            let expect = f.efficiency * f.peak_flops;
            if a.is_finite() && expect > 0.0 && ((a - expect) / expect).abs() > 0.02 {
                c.err(
                    &at("achieved_flops"),
                    format!(
                        "`achieved_flops` {a:e} is not `efficiency` × `peak_flops` ({expect:e}) within 2%"
                    ),
                );
            }
        }
        c.curve(
            p.schema_version,
            &[N("compute"), N(dt), N("efficiency_by_size")],
            &f.efficiency_by_size,
        );
        c.text(&at("source"), "`source`", &f.source);
    }
    for (dt, v) in &p.vector {
        let at = |k| [N("vector"), N(dt), N(k)];
        if !DTYPES.contains(&dt.as_str()) {
            c.err(
                &[N("vector"), N(dt)],
                format!("unknown dtype `{dt}` in `vector`"),
            );
        }
        if p.schema_version < 3 {
            c.err(&[N("vector"), N(dt)], "`vector` needs `schema_version = 3`");
        }
        c.positive(&at("peak_flops"), "`peak_flops`", v.peak_flops);
        if v.efficiency_by_size.is_empty() {
            c.err(
                &at("efficiency_by_size"),
                "`efficiency_by_size` needs at least one row",
            );
        }
        c.curve(
            p.schema_version,
            &at("efficiency_by_size"),
            &v.efficiency_by_size,
        );
        c.text(&at("source"), "`source`", &v.source);
    }

    if let Some(m) = &p.memory {
        let at = |k| [N("memory"), N(k)];
        c.positive(
            &at("peak_bytes_per_s"),
            "`peak_bytes_per_s`",
            m.peak_bytes_per_s,
        );
        c.efficiency(&at("efficiency"), m.efficiency);
        c.interval(&at("efficiency_ci95"), m.efficiency, m.efficiency_ci95);
        if let Some(a) = m.achieved_bytes_per_s {
            c.positive(&at("achieved_bytes_per_s"), "`achieved_bytes_per_s`", a);
        }
        c.curve(
            p.schema_version,
            &at("efficiency_by_size"),
            &m.efficiency_by_size,
        );
        c.text(&at("source"), "`source`", &m.source);
    } else if p.schema_version < 4 {
        c.err(
            &[],
            "missing field `memory` (optional from `schema_version = 4`)",
        );
    }

    if let Some(l) = &p.launch {
        let at = |k| [N("launch"), N(k)];
        if c.finite(&at("overhead_s"), "`overhead_s`", l.overhead_s)
            && !(0.0..1.0).contains(&l.overhead_s)
        {
            c.err(
                &at("overhead_s"),
                format!(
                    "a launch overhead is seconds in [0, 1), found {}",
                    l.overhead_s
                ),
            );
        }
        c.interval(&at("overhead_ci95"), l.overhead_s, l.overhead_ci95);
        c.text(&at("source"), "`source`", &l.source);
    } else if p.schema_version < 4 {
        c.err(
            &[],
            "missing field `launch` (optional from `schema_version = 4`)",
        );
    }

    super::paths::validate(&mut c, p);
    super::evidence::validate(&mut c, p);
    c.errs
}

/// A transfer path's `check`: the counts agree with the sizes, the times are positive and
/// the error is what they give.
pub(super) fn check_figure(c: &mut Checker, version: u32, ti: usize, k: &PredictionCheck) {
    use Key::{Index as I, Name as N};
    let at = |f| [N("transfer"), I(ti), N("check"), N(f)];
    if version < 2 {
        c.err(
            &[N("transfer"), I(ti), N("check")],
            "a transfer path's `check` needs `schema_version = 2`",
        );
    }
    if k.sizes_bytes.is_empty() || k.sizes_bytes.contains(&0) {
        c.err(
            &at("sizes_bytes"),
            "`sizes_bytes` lists the chain's copies, each greater than zero",
        );
    }
    if k.copies != k.sizes_bytes.len() as u64 {
        c.err(
            &at("copies"),
            format!(
                "`copies` is {} but `sizes_bytes` lists {}",
                k.copies,
                k.sizes_bytes.len()
            ),
        );
    }
    let sum = k.sizes_bytes.iter().fold(0u64, |a, b| a.saturating_add(*b));
    if k.bytes != sum {
        c.err(
            &at("bytes"),
            format!("`bytes` is {} but `sizes_bytes` sums to {sum}", k.bytes),
        );
    }
    c.positive(&at("predicted_s"), "`predicted_s`", k.predicted_s);
    c.positive(&at("measured_s"), "`measured_s`", k.measured_s);
    if c.finite(&at("rel_error"), "`rel_error`", k.rel_error)
        && k.measured_s > 0.0
        && ((k.predicted_s - k.measured_s) / k.measured_s - k.rel_error).abs() > 1e-6
    {
        c.err(
            &at("rel_error"),
            "`rel_error` must be (predicted_s − measured_s) / measured_s",
        );
    }
    if k.repetitions == 0 {
        c.err(&at("repetitions"), "`repetitions` must be at least 1");
    }
    c.text(&at("date"), "`date`", &k.date);
    c.text(&at("method"), "`method`", &k.method);
}
