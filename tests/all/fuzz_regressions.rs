//! Inputs the fuzzers found, kept in tests/fuzz_found as regression tests. From
//! fuzz/fuzz_targets/parse.rs: text that parses must survive `fmt` with the same structure and
//! comments (blank lines are normalised by design), and `fmt` must be idempotent on it (both
//! findings were runs of blank lines the old fuzz check compared too strictly). From
//! fuzz/fuzz_targets/raycluster.rs (in `raycluster/`): a Ray cluster YAML imports or is refused
//! at a place inside it, never panics (the findings: a block scalar ending the file without a
//! line break, on which libyaml-safer 0.3 panicked; an error after a NEL, which libyaml counts
//! as a line break, as Orrery's locations do, where the fuzz check counted only LF and CR; a
//! pod's `cpu: "2Ti"`, which wrote a node of 2.2 × 10¹² cores the language refuses: such a node
//! is now left out with a warning).

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
        if !f.path().is_file() {
            continue;
        }
        roundtrip(&String::from_utf8_lossy(&std::fs::read(f.path()).unwrap()));
        n += 1;
    }
    assert!(n >= 2, "the fuzzer's findings went missing");
}

#[test]
fn ray_cluster_findings_import_or_are_refused_inside_the_text() {
    use orrery::raycluster::{Failure, Options, Workers, import};
    let mut n = 0;
    for f in std::fs::read_dir("tests/fuzz_found/raycluster")
        .unwrap()
        .flatten()
    {
        let text = std::fs::read_to_string(f.path()).unwrap();
        // Lines end as libyaml counts them (YAML 1.1): \r\n, \n, \r, NEL, LS, PS.
        let lines = text
            .replace("\r\n", "\n")
            .matches(['\n', '\r', '\u{85}', '\u{2028}', '\u{2029}'])
            .count()
            + 1;
        for workers in [Workers::Min, Workers::Max] {
            let opts = Options {
                name: None,
                workers,
                file_name: "found.yaml".into(),
            };
            match import(&text, &opts) {
                Ok(i) => {
                    let l = orrery::load_str("imported.orr", &i.text);
                    assert!(!l.has_errors(), "{}", l.render(false));
                }
                Err(Failure::Located(e)) => {
                    assert!(e.at.line >= 1 && e.at.line <= lines, "{e:?}");
                }
                Err(Failure::Unmapped { message, .. }) => {
                    assert!(!message.contains("bug in the import"), "{message}");
                }
            }
        }
        n += 1;
    }
    assert!(n >= 1, "the fuzzer's findings went missing");
}
