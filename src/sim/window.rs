//! The simulated window of a run: how far it goes (`--horizon`, an experiment's, the
//! services' default, or until the work is done) and the name of why, printed with every
//! result; and the percentile names latencies are reported by.

use crate::engine::Time;
use crate::scenario::Spec;

/// How long services run when neither the caller nor an experiment says (simulated).
pub const DEFAULT_SERVICE_HORIZON: Time = 3600 * crate::engine::SEC;

/// The fraction a percentile name stands for: `p50` → 0.5, `p999` → 0.999.
pub fn percentile(p: &str) -> f64 {
    match p {
        "p50" => 0.50,
        "p90" => 0.90,
        "p99" => 0.99,
        _ => 0.999,
    }
}

/// The simulated window a run uses, and why.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Window {
    /// End of the window; `None`: until the work finished.
    #[serde(skip)]
    pub horizon: Option<Time>,
    /// The same in seconds (absent without a horizon).
    #[serde(rename = "horizon_s", skip_serializing_if = "Option::is_none")]
    pub seconds: Option<f64>,
    /// `--horizon`, `experiment NAME`, `default for services (1 h)` or `none (until the
    /// work finished)`.
    #[serde(rename = "horizon_source")]
    pub source: String,
}

impl Window {
    /// `12 h (experiment drill)`, `1 h (default for services)`, `none (until the work
    /// finished)`.
    pub fn label(&self) -> String {
        let Some(s) = self.seconds else {
            return self.source.clone();
        };
        // The largest unit that writes the window exactly in three figures, else seconds.
        let exact = [(3600.0, "h"), (60.0, "min")]
            .into_iter()
            .find_map(|(k, u)| {
                let t = crate::units::sig3(s / k);
                (s >= k && t.parse::<f64>().is_ok_and(|x| (x * k - s).abs() < 1e-9 * s))
                    .then(|| format!("{t} {u}"))
            });
        let d = exact.unwrap_or_else(|| format!("{} s", crate::units::sig3(s)));
        format!("{d} ({})", self.source)
    }
}

/// The window of a run of `spec`: `given` (the command line's `--horizon`), else the first
/// experiment with a `horizon`, else [`DEFAULT_SERVICE_HORIZON`] when there are services
/// under an open load (they never finish on their own), else none: the run ends when the
/// work does — a finite benchmark load (`arrival concurrency` / `offline`) included, so its
/// per-second rates are over the time it took, as the benchmark tools report them.
pub fn window(spec: &Spec, given: Option<Time>) -> Window {
    let experiment = spec.experiments.iter().find(|e| e.horizon.is_some());
    let services = spec
        .workloads
        .iter()
        .flat_map(|w| &w.services)
        .any(|s| s.arrival.finite().is_none());
    let (horizon, source) = match (given, experiment) {
        (Some(h), _) => (Some(h), "--horizon".to_string()),
        (None, Some(e)) => (e.horizon.map(|h| h.0), format!("experiment {}", e.name)),
        (None, None) if services => (
            Some(DEFAULT_SERVICE_HORIZON),
            "default for services".to_string(),
        ),
        (None, None) => (None, "none (until the work finished)".to_string()),
    };
    Window {
        horizon,
        seconds: horizon.map(|h| h as f64 / 1e9),
        source,
    }
}
