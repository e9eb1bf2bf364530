//! Typed physical quantities and the unit table of the language.
//!
//! A number with a unit parses into a `(Kind, value in base units)` pair; the schema then asks
//! for a specific kind and gets a typed newtype back (`Bytes`, `Bandwidth`, `Duration`, ...),
//! so a bandwidth can never be used where bytes are meant. Base units: bytes, bytes/s,
//! nanoseconds, FLOP, FLOP/s, watts, joules, dollars, dollars/hour, events/s.

use serde::Serialize;
use std::fmt;

/// What a quantity measures.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
pub enum Kind {
    Bytes,
    Bandwidth,
    Time,
    FlopRate,
    Flop,
    Power,
    Energy,
    Price,
    Money,
    Rate,
    Fraction,
}

impl Kind {
    pub fn name(self) -> &'static str {
        match self {
            Kind::Bytes => "bytes",
            Kind::Bandwidth => "bandwidth",
            Kind::Time => "time",
            Kind::FlopRate => "compute rate",
            Kind::Flop => "compute amount",
            Kind::Power => "power",
            Kind::Energy => "energy",
            Kind::Price => "price per hour",
            Kind::Money => "money",
            Kind::Rate => "event rate",
            Kind::Fraction => "fraction",
        }
    }
    /// An example of a well-formed value, for error messages.
    pub fn example(self) -> &'static str {
        match self {
            Kind::Bytes => "80 GiB",
            Kind::Bandwidth => "3.35 TB/s or 400 Gbps",
            Kind::Time => "2.5 us",
            Kind::FlopRate => "989 TFLOPS",
            Kind::Flop => "1.2 PFLOP",
            Kind::Power => "700 W",
            Kind::Energy => "10 kWh",
            Kind::Price => "3.80 $/h",
            Kind::Money => "1200 $",
            Kind::Rate => "200 /s",
            Kind::Fraction => "50%",
        }
    }
}

const K: f64 = 1e3;
const M: f64 = 1e6;
const G: f64 = 1e9;
const T: f64 = 1e12;
const P: f64 = 1e15;
const KI: f64 = 1024.0;
const MI: f64 = KI * 1024.0;
const GI: f64 = MI * 1024.0;
const TI: f64 = GI * 1024.0;
const PI: f64 = TI * 1024.0;

/// The element types a figure may be given for (`flops bf16 ...`, `precision fp8`, a
/// profile's `[compute.DTYPE]`).
pub const DTYPES: &[&str] = &["fp64", "fp32", "tf32", "fp16", "bf16", "fp8", "int8", "fp4"];

/// Every unit the language knows: spelling, kind, factor to the base unit.
/// Longer spellings come first where one is a prefix of another (`GB/s` before `GB`).
pub const UNITS: &[(&str, Kind, f64)] = &[
    ("KiB/s", Kind::Bandwidth, KI),
    ("MiB/s", Kind::Bandwidth, MI),
    ("GiB/s", Kind::Bandwidth, GI),
    ("TiB/s", Kind::Bandwidth, TI),
    ("B/s", Kind::Bandwidth, 1.0),
    ("KB/s", Kind::Bandwidth, K),
    ("MB/s", Kind::Bandwidth, M),
    ("GB/s", Kind::Bandwidth, G),
    ("TB/s", Kind::Bandwidth, T),
    ("bps", Kind::Bandwidth, 1.0 / 8.0),
    ("Kbps", Kind::Bandwidth, K / 8.0),
    ("Mbps", Kind::Bandwidth, M / 8.0),
    ("Gbps", Kind::Bandwidth, G / 8.0),
    ("Tbps", Kind::Bandwidth, T / 8.0),
    ("KiB", Kind::Bytes, KI),
    ("MiB", Kind::Bytes, MI),
    ("GiB", Kind::Bytes, GI),
    ("TiB", Kind::Bytes, TI),
    ("PiB", Kind::Bytes, PI),
    ("B", Kind::Bytes, 1.0),
    ("KB", Kind::Bytes, K),
    ("MB", Kind::Bytes, M),
    ("GB", Kind::Bytes, G),
    ("TB", Kind::Bytes, T),
    ("PB", Kind::Bytes, P),
    ("ns", Kind::Time, 1.0),
    ("us", Kind::Time, 1e3),
    ("µs", Kind::Time, 1e3),
    ("ms", Kind::Time, 1e6),
    ("s", Kind::Time, 1e9),
    ("min", Kind::Time, 60e9),
    ("h", Kind::Time, 3600e9),
    ("d", Kind::Time, 86400e9),
    ("FLOPS", Kind::FlopRate, 1.0),
    ("GFLOPS", Kind::FlopRate, G),
    ("TFLOPS", Kind::FlopRate, T),
    ("PFLOPS", Kind::FlopRate, P),
    ("EFLOPS", Kind::FlopRate, 1e18),
    ("FLOP", Kind::Flop, 1.0),
    ("GFLOP", Kind::Flop, G),
    ("TFLOP", Kind::Flop, T),
    ("PFLOP", Kind::Flop, P),
    ("EFLOP", Kind::Flop, 1e18),
    ("W", Kind::Power, 1.0),
    ("kW", Kind::Power, K),
    ("MW", Kind::Power, M),
    ("J", Kind::Energy, 1.0),
    ("kJ", Kind::Energy, K),
    ("Wh", Kind::Energy, 3600.0),
    ("kWh", Kind::Energy, 3600.0 * K),
    ("MWh", Kind::Energy, 3600.0 * M),
    ("$/h", Kind::Price, 1.0),
    ("$", Kind::Money, 1.0),
    ("/s", Kind::Rate, 1.0),
    ("/ms", Kind::Rate, 1e3),
    ("/min", Kind::Rate, 1.0 / 60.0),
    ("/h", Kind::Rate, 1.0 / 3600.0),
    ("%", Kind::Fraction, 0.01),
];

/// Look a unit up by its exact spelling.
pub fn lookup(unit: &str) -> Option<(Kind, f64)> {
    UNITS
        .iter()
        .find(|(u, _, _)| *u == unit)
        .map(|&(_, k, f)| (k, f))
}

macro_rules! quantity {
    ($(#[$m:meta])* $name:ident($t:ty)) => {
        $(#[$m])*
        #[derive(Debug, Clone, Copy, PartialEq, PartialOrd, Default, Serialize)]
        pub struct $name(pub $t);
    };
}

quantity!(
    /// A size in bytes.
    Bytes(u64)
);
quantity!(
    /// Bytes per second.
    Bandwidth(f64)
);
quantity!(
    /// Simulated time in integer nanoseconds (the engine's clock unit).
    Duration(u64)
);
quantity!(
    /// FLOP per second.
    FlopRate(f64)
);
quantity!(
    /// An amount of floating-point work.
    Flop(f64)
);
quantity!(
    /// Watts.
    Power(f64)
);
quantity!(
    /// Joules.
    Energy(f64)
);
quantity!(
    /// Dollars per hour.
    Price(f64)
);
quantity!(
    /// Dollars.
    Money(f64)
);
quantity!(
    /// Events per second.
    EventRate(f64)
);
quantity!(
    /// A fraction, 0.5 for `50%`.
    Fraction(f64)
);

/// `serialize_with` for an optional [`Duration`]: seconds (JSON keys say `_s`), `null` if none.
pub fn opt_secs<S: serde::Serializer>(d: &Option<Duration>, s: S) -> Result<S::Ok, S::Error> {
    d.map(Duration::as_secs_f64).serialize(s)
}

impl Duration {
    pub fn as_secs_f64(self) -> f64 {
        self.0 as f64 / 1e9
    }
}

/// Scale `v` by SI prefixes and print three significant figures: `3.35 T`.
fn si(v: f64, unit: &str, f: &mut fmt::Formatter<'_>) -> fmt::Result {
    const PREFIXES: [(f64, &str); 7] = [
        (1e18, "E"),
        (1e15, "P"),
        (1e12, "T"),
        (1e9, "G"),
        (1e6, "M"),
        (1e3, "K"),
        (1.0, ""),
    ];
    let (scale, p) = PREFIXES
        .iter()
        .find(|(s, _)| v.abs() >= *s)
        .copied()
        .unwrap_or((1.0, ""));
    let p = if p == "K" && unit == "W" { "k" } else { p };
    write!(f, "{} {p}{unit}", sig3(v / scale))
}

/// A number with about three significant digits, without needless zeros or exponents for
/// everyday magnitudes.
pub fn fmt_num(v: f64) -> String {
    if !v.is_finite() {
        return format!("{v}");
    }
    let a = v.abs();
    if a == 0.0 {
        "0".into()
    } else if !(1e-3..1e7).contains(&a) {
        format!("{v:.2e}")
    } else {
        let digits = (2 - a.log10().floor() as i32).max(0) as usize;
        let s = format!("{v:.digits$}");
        if s.contains('.') {
            s.trim_end_matches('0').trim_end_matches('.').to_string()
        } else {
            s
        }
    }
}

/// A byte count in binary units (`4 KiB`, `1 GiB`).
pub fn fmt_bytes(b: f64) -> String {
    const UNITS: [&str; 7] = ["B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"];
    let mut v = b;
    let mut i = 0;
    while v.abs() >= 1024.0 && i + 1 < UNITS.len() {
        v /= 1024.0;
        i += 1;
    }
    format!("{} {}", fmt_num(v), UNITS[i])
}

/// Three significant figures without trailing zeros.
/// `bytes` in GiB to three significant figures: a message that compares sizes (needs, has)
/// gives them all in this one unit, whatever unit each was declared in.
pub fn gib(bytes: f64) -> String {
    format!("{} GiB", sig3(bytes / GI))
}

pub fn sig3(v: f64) -> String {
    if v == 0.0 || !v.is_finite() {
        return format!("{v}");
    }
    let digits = (2 - v.abs().log10().floor() as i32).max(0) as usize;
    let s = format!("{v:.digits$}");
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        s
    }
}

impl fmt::Display for Bytes {
    /// Binary units when the size is a whole number of them (memory is usually sized so),
    /// decimal otherwise (datasheets quote HBM in GB): `2 TiB`, `80 GB`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        const BIN: [(f64, &str); 5] = [
            (PI, "PiB"),
            (TI, "TiB"),
            (GI, "GiB"),
            (MI, "MiB"),
            (KI, "KiB"),
        ];
        let v = self.0 as f64;
        match BIN.iter().find(|(s, _)| v >= *s) {
            Some((s, u)) if (v / s).fract() == 0.0 => write!(f, "{} {u}", v / s),
            _ if self.0 < 1000 => write!(f, "{} B", self.0),
            _ => si(v, "B", f),
        }
    }
}
impl fmt::Display for Bandwidth {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        si(self.0, "B/s", f)
    }
}
impl fmt::Display for FlopRate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        si(self.0, "FLOPS", f)
    }
}
impl fmt::Display for Flop {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        si(self.0, "FLOP", f)
    }
}
impl fmt::Display for Power {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        si(self.0, "W", f)
    }
}
impl fmt::Display for Price {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:.2} $/h", self.0)
    }
}
impl fmt::Display for Duration {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let ns = self.0 as f64;
        let (s, u) = [
            (3600e9, "h"),
            (60e9, "min"),
            (1e9, "s"),
            (1e6, "ms"),
            (1e3, "us"),
        ]
        .into_iter()
        .find(|(s, _)| ns >= *s)
        .unwrap_or((1.0, "ns"));
        write!(f, "{} {u}", sig3(ns / s))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn units_convert_to_base() {
        assert_eq!(lookup("GiB"), Some((Kind::Bytes, 1073741824.0)));
        assert_eq!(
            lookup("400 Gbps".split(' ').nth(1).unwrap()).unwrap().1 * 400.0,
            50e9
        );
        assert_eq!(lookup("us"), Some((Kind::Time, 1e3)));
        assert_eq!(lookup("TFLOPS").unwrap().0, Kind::FlopRate);
        assert_eq!(lookup("TFLOP").unwrap().0, Kind::Flop);
        assert_eq!(lookup("$/h").unwrap().0, Kind::Price);
        assert_eq!(lookup("furlongs"), None);
    }

    #[test]
    fn spellings_are_unique() {
        for (i, (a, _, _)) in UNITS.iter().enumerate() {
            assert!(
                UNITS[i + 1..].iter().all(|(b, _, _)| a != b),
                "duplicate unit {a}"
            );
        }
    }

    #[test]
    fn display_is_human() {
        assert_eq!(Bytes(80 * 1024 * 1024 * 1024).to_string(), "80 GiB");
        assert_eq!(Bytes(80_000_000_000).to_string(), "80 GB");
        assert_eq!(Bytes(512).to_string(), "512 B");
        assert_eq!(Power(10_200.0).to_string(), "10.2 kW");
        assert_eq!(Bandwidth(3.35e12).to_string(), "3.35 TB/s");
        assert_eq!(FlopRate(989e12).to_string(), "989 TFLOPS");
        assert_eq!(Duration(2_500).to_string(), "2.5 us");
        assert_eq!(sig3(0.123456), "0.123");
        assert_eq!(sig3(1234.0), "1234");
    }
}
