//! Inputs the fuzzer (fuzz/fuzz_targets/parse.rs) found, kept in tests/fuzz_found as
//! regression tests: text that parses must survive `fmt` with the same structure and comments
//! (blank lines are normalised by design), and `fmt` must be idempotent on it. (Both findings so
//! far were runs of blank lines the old fuzz check compared too strictly.)

use orrery::syntax::fmt::format;
use orrery::syntax::parse;

fn roundtrip(text: &str) {
    let (tree, d) = parse(text, 0);
    if !d.is_empty() {
        return;
    }
    let Ok(out) = format(&tree) else { return };
    let (again, d2) = parse(&out, 0);
    assert!(d2.is_empty(), "fmt output does not parse: {d2:?}\n{out}");
    assert_eq!(
        again.structure(),
        tree.structure(),
        "fmt changed the tree:\n--- input\n{text}\n--- fmt\n{out}"
    );
    assert_eq!(
        again.comments(),
        tree.comments(),
        "fmt lost a comment:\n{text}"
    );
    assert_eq!(
        format(&again).unwrap(),
        out,
        "fmt is not idempotent:\n{text}"
    );
}

#[test]
fn fuzzer_findings() {
    let mut n = 0;
    for f in std::fs::read_dir("tests/fuzz_found").unwrap().flatten() {
        roundtrip(&String::from_utf8_lossy(&std::fs::read(f.path()).unwrap()));
        n += 1;
    }
    assert!(n >= 2, "the fuzzer's findings went missing");
}
