//! `fmt` properties: parse(fmt(x)) == parse(x) (spans aside) and fmt(fmt(x)) == fmt(x), over
//! generated trees and over every scenario and catalog file.

use orrery::syntax::ast::*;
use orrery::syntax::fmt::format;
use orrery::syntax::parse;
use proptest::prelude::*;

fn sp() -> orrery::diag::Span {
    orrery::diag::Span::default()
}

fn ident() -> impl Strategy<Value = String> {
    "[a-zA-Z_][a-zA-Z0-9_]{0,6}([.-][a-z0-9]{1,3})?"
        .prop_filter("not a unit word", |s| orrery::units::lookup(s).is_none())
}

fn number() -> impl Strategy<Value = Number> {
    prop_oneof![
        (0u64..100_000).prop_map(|n| n.to_string()),
        (0u32..10_000, 1u32..999).prop_map(|(a, b)| format!("{a}.{b}")),
        (1u32..10, 0u32..30).prop_map(|(a, e)| format!("{a}e{e}")),
        (1u64..1000).prop_map(|n| format!("-{n}")),
    ]
    .prop_map(|text| Number {
        value: text.parse().unwrap(),
        text,
    })
}

fn leaf() -> impl Strategy<Value = ValueKind> {
    let units: Vec<&'static str> = orrery::units::UNITS.iter().map(|u| u.0).collect();
    prop_oneof![
        ident().prop_map(ValueKind::Ident),
        "[ -~é\\n\\t]{0,12}".prop_map(ValueKind::Str),
        (number(), prop::option::of(prop::sample::select(units))).prop_map(|(num, unit)| {
            ValueKind::Quantity {
                num,
                unit: unit.map(str::to_string),
            }
        }),
        (ident(), 0u64..50, 0u64..50).prop_map(|(base, lo, hi)| ValueKind::Pattern {
            base,
            lo,
            hi
        }),
        (0i64..100, 0i64..100).prop_map(|(lo, hi)| ValueKind::Range { lo, hi }),
        prop::collection::vec(1u64..64, 2..4).prop_map(ValueKind::Dims),
        (0u32..10, 1u32..10).prop_map(|(a, b)| ValueKind::Ratio(
            Number {
                text: a.to_string(),
                value: a.into()
            },
            Number {
                text: b.to_string(),
                value: b.into()
            }
        )),
    ]
}

fn value() -> impl Strategy<Value = Value> {
    leaf()
        .prop_recursive(3, 24, 4, |inner| {
            let v = inner.clone().prop_map(|kind| Value { kind, span: sp() });
            prop_oneof![
                prop::collection::vec(v.clone(), 0..4).prop_map(ValueKind::List),
                prop::collection::vec(((ident(), any::<bool>()), v.clone()), 1..4).prop_map(|es| {
                    ValueKind::Map(
                        es.into_iter()
                            .map(|((name, quoted), v)| {
                                (
                                    MapKey {
                                        name,
                                        quoted,
                                        span: sp(),
                                    },
                                    v,
                                )
                            })
                            .collect(),
                    )
                }),
                (
                    ident(),
                    prop::collection::vec(prop::collection::vec(v, 1..3), 0..3)
                )
                    .prop_map(|(name, args)| ValueKind::Call { name, args }),
            ]
        })
        .prop_map(|kind| Value { kind, span: sp() })
}

fn comment() -> impl Strategy<Value = String> {
    // What the parser keeps: no trailing spaces, at most the indentation after one space.
    "[ ]{0,3}[!-~][ -~]{0,20}".prop_map(|s| s.trim_end().to_string())
}

fn trivia() -> impl Strategy<Value = Vec<Trivia>> {
    prop::collection::vec(
        prop_oneof![Just(Trivia::Blank), comment().prop_map(Trivia::Comment)],
        0..3,
    )
}

fn stmt(depth: u32) -> BoxedStrategy<Stmt> {
    let block = if depth == 0 {
        Just(None).boxed()
    } else {
        prop::option::of((prop::collection::vec(stmt(depth - 1), 0..3), trivia()))
            .prop_map(|b| {
                b.map(|(stmts, closing)| Block {
                    stmts,
                    closing,
                    span: sp(),
                })
            })
            .boxed()
    };
    (
        ident(),
        prop::collection::vec(value(), 0..4),
        any::<u8>(),
        block,
        trivia(),
        prop::option::of(comment()),
    )
        .prop_map(|(key, values, mask, block, leading, trailing_comment)| {
            let commas = (0..values.len().saturating_sub(1))
                .filter(|k| mask & (1 << k) != 0)
                .collect();
            Stmt {
                key: Ident {
                    name: key,
                    span: sp(),
                },
                values,
                commas,
                block: block.map(Box::new),
                span: sp(),
                leading,
                trailing_comment,
            }
        })
        .boxed()
}

fn file() -> impl Strategy<Value = File> {
    (prop::collection::vec(stmt(2), 0..5), trivia()).prop_map(|(stmts, trailing)| File {
        stmts,
        trailing,
        unplaced_comments: Vec::new(),
    })
}

fn reparse(text: &str) -> File {
    let (f, d) = parse(text, 0);
    assert!(d.is_empty(), "formatted text does not parse: {d:?}\n{text}");
    f.without_spans()
}

proptest! {
    // A fixed seed keeps CI deterministic; PROPTEST_CASES and PROPTEST_RNG_SEED explore more.
    #![proptest_config(ProptestConfig {
        cases: std::env::var("PROPTEST_CASES").ok().and_then(|c| c.parse().ok()).unwrap_or(1000),
        rng_seed: proptest::test_runner::RngSeed::Fixed(std::env::var("PROPTEST_RNG_SEED").ok().and_then(|c| c.parse().ok()).unwrap_or(0x0_77e2)),
        failure_persistence: None,
        .. ProptestConfig::default()
    })]

    #[test]
    fn fmt_then_parse_is_stable(f in file()) {
        let once = format(&f).unwrap();
        let parsed = reparse(&once);
        let twice = format(&parsed).unwrap();
        prop_assert_eq!(&once, &twice, "fmt is not idempotent");
        prop_assert_eq!(reparse(&twice), parsed.clone());
        // Nothing is lost or reordered: the structure is the generated one, and every comment
        // survives in order (blank lines are normalised, so they are compared apart).
        prop_assert_eq!(structure(&parsed), structure(&f));
        prop_assert_eq!(comments(&parsed), comments(&f));
    }
}

fn structure(f: &File) -> File {
    f.structure()
}

fn comments(f: &File) -> Vec<String> {
    f.comments()
}

#[test]
fn real_files_roundtrip() {
    let mut texts: Vec<(String, String)> = orrery::catalog::FILES
        .iter()
        .map(|(n, t)| (n.to_string(), t.to_string()))
        .collect();
    for path in scenario_files(std::path::Path::new("scenarios")) {
        texts.push((
            path.display().to_string(),
            std::fs::read_to_string(&path).unwrap(),
        ));
    }
    assert!(texts.len() >= 7);
    for (name, text) in texts {
        let (tree, d) = parse(&text, 0);
        assert!(d.is_empty(), "{name}: {d:?}");
        let out = format(&tree).unwrap();
        assert_eq!(
            reparse(&out),
            tree.without_spans(),
            "{name}: parse(fmt(x)) != parse(x)"
        );
        assert_eq!(
            format(&reparse(&out)).unwrap(),
            out,
            "{name}: fmt is not idempotent"
        );
    }
}

fn scenario_files(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            out.extend(scenario_files(&p));
        } else if p.extension().is_some_and(|x| x == "orr") {
            out.push(p);
        }
    }
    out.sort();
    out
}
