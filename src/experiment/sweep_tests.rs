//! Tests of `sweep` (src/experiment/sweep.rs),
//! kept beside it so that the module stays short.

/// Shards carry their values as JSON; `merge` must give back the very same `f64`s, or a
/// merged `runs.csv` differs from the unsharded one in the last digit. serde_json's default
/// float parser is not exact; the `float_roundtrip` feature makes it so.
#[test]
fn shard_values_survive_json_exactly() {
    for v in [
        0.042026631200000004_f64,
        0.1 + 0.2,
        1.0 / 3.0,
        2.2250738585072014e-308,
    ] {
        let text = serde_json::to_string(&v).unwrap();
        let back: f64 = serde_json::from_str(&text).unwrap();
        assert_eq!(back.to_bits(), v.to_bits(), "{text}");
    }
}
