//! What a sweep's plots draw of its representative run, carried by a shard to `merge`
//! (`outputs::sweep::representative` builds it from the run).

/// What the `timeline` and `utilization` plots draw of the representative run (the first
/// cell's first seed): their data, not the run, so that a shard can carry it to `merge` (a
/// few hundred rows of spans and at most a few thousand points, whatever the run's length).
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Representative {
    /// The run's window (s): the plots' time axis.
    pub horizon_s: f64,
    /// The timeline's rows, what they are (`device`, `node`, …) and how the title says so.
    pub timeline: Vec<crate::plot::TimelineRow>,
    pub rows_are: String,
    pub rows_described: String,
    pub utilization: Vec<crate::plot::UtilSeries>,
}
