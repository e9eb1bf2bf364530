//! Tests of `parse` (src/network/flowfile/parse.rs),
//! kept beside it so that the module stays short.

use super::*;

#[test]
fn numbers_and_units_split() {
    assert_eq!(split_number("400Gbps"), Some((400.0, "Gbps")));
    assert_eq!(split_number("1.5us"), Some((1.5, "us")));
    assert_eq!(split_number("1e6"), Some((1e6, "")));
    assert_eq!(split_number("1_000_000B"), Some((1e6, "B")));
    assert_eq!(split_number("-2ms"), Some((-2.0, "ms")));
    assert_eq!(split_number("1EFLOPS"), Some((1.0, "EFLOPS")));
    assert_eq!(split_number("2e-3s"), Some((2e-3, "s")));
    assert_eq!(split_number("Gbps"), None);
    assert_eq!(split_number(".5s"), None);
}

#[test]
fn times_convert_to_seconds_exactly() {
    let f = parse("link l 1B/s 1.5ms\nflow a 0 2s l\nflow b 0 90min l\n", 0).unwrap();
    assert_eq!(f.links[0].latency, 0.0015);
    assert_eq!(f.flows[0].start, 2.0);
    assert_eq!(f.flows[1].start, 5400.0);
}

#[test]
fn lines_and_comments_tokenize_with_offsets() {
    let v: Vec<Vec<(String, usize)>> = lines("a  b # c\r\n\tx\n")
        .map(|t| t.iter().map(|t| (t.s.to_string(), t.at)).collect())
        .collect();
    assert_eq!(v[0], vec![("a".into(), 0), ("b".into(), 3)]);
    assert_eq!(v[1], vec![("x".into(), 11)]);
}
