//! Surface syntax: values, statements, recovery and canonical formatting.

use orrery::diag::{SourceMap, render};
use orrery::syntax::fmt::format;
use orrery::syntax::{ValueKind, parse};

fn parse_ok(src: &str) -> orrery::syntax::File {
    let (f, d) = parse(src, 0);
    assert!(d.is_empty(), "unexpected errors for {src:?}: {d:#?}");
    f
}

fn errors(src: &str) -> String {
    let mut m = SourceMap::new();
    let id = m.add("t.orr", src);
    let (_, d) = parse(src, id);
    assert!(!d.is_empty(), "expected an error for {src:?}");
    render(&m, &d, false)
}

#[test]
fn values_of_every_kind() {
    let f = parse_ok(
        "s ident \"str\" 8 80 GiB 3.35TB/s r[0..31] 1..20 2x2x4 2:1 [a, b] { k: 1, \"x.y/z\": \"v\" } weibull(shape 0.8) 50% 3.80 $/h 200 /s\n",
    );
    let kinds: Vec<&ValueKind> = f.stmts[0].values.iter().map(|v| &v.kind).collect();
    assert!(matches!(kinds[0], ValueKind::Ident(n) if n == "ident"));
    assert!(matches!(kinds[1], ValueKind::Str(s) if s == "str"));
    assert!(matches!(kinds[2], ValueKind::Quantity { unit: None, num } if num.value == 8.0));
    assert!(matches!(kinds[3], ValueKind::Quantity { unit: Some(u), .. } if u == "GiB"));
    assert!(
        matches!(kinds[4], ValueKind::Quantity { unit: Some(u), num } if u == "TB/s" && num.value == 3.35)
    );
    assert!(matches!(kinds[5], ValueKind::Pattern { base, lo: 0, hi: 31 } if base == "r"));
    assert!(matches!(kinds[6], ValueKind::Range { lo: 1, hi: 20 }));
    assert!(matches!(kinds[7], ValueKind::Dims(d) if d == &vec![2, 2, 4]));
    assert!(matches!(kinds[8], ValueKind::Ratio(a, b) if a.value == 2.0 && b.value == 1.0));
    assert!(matches!(kinds[9], ValueKind::List(v) if v.len() == 2));
    assert!(matches!(kinds[10], ValueKind::Map(e) if e.len() == 2 && e[1].0.name == "x.y/z"));
    assert!(
        matches!(kinds[11], ValueKind::Call { name, args } if name == "weibull" && args[0].len() == 2)
    );
    assert!(
        matches!(kinds[12], ValueKind::Quantity { unit: Some(u), num } if u == "%" && num.value == 50.0)
    );
    assert!(matches!(kinds[13], ValueKind::Quantity { unit: Some(u), .. } if u == "$/h"));
    assert!(matches!(kinds[14], ValueKind::Quantity { unit: Some(u), .. } if u == "/s"));
}

#[test]
fn unit_needs_a_word_boundary() {
    // `h100` is a name, not 4 hours followed by `100`.
    let f = parse_ok("device x 4 h100\nat 2 h kill\n");
    assert!(matches!(
        &f.stmts[0].values[1].kind,
        ValueKind::Quantity { unit: None, .. }
    ));
    assert!(matches!(&f.stmts[0].values[2].kind, ValueKind::Ident(n) if n == "h100"));
    assert!(
        matches!(&f.stmts[1].values[0].kind, ValueKind::Quantity { unit: Some(u), .. } if u == "h")
    );
    // Names may contain `-` and `.`: `B-k8` and `s.x` are names, not units.
    let f = parse_ok("v 4 B-k8 5 s.x\n");
    assert!(
        f.stmts[0]
            .values
            .iter()
            .all(|v| !matches!(&v.kind, ValueKind::Quantity { unit: Some(_), .. }))
    );
    // Longest unit wins: MWh is energy, not megawatts followed by `h`.
    let f = parse_ok("e 3 MWh\n");
    assert!(
        matches!(&f.stmts[0].values[0].kind, ValueKind::Quantity { unit: Some(u), .. } if u == "MWh")
    );
}

#[test]
fn blocks_nest_and_maps_are_told_apart() {
    let f =
        parse_ok("node a {\n  labels { \"k\": \"v\" }\n  cpu sockets 2, cores 8\n  inner {}\n}\n");
    let b = f.stmts[0].block.as_ref().unwrap();
    assert_eq!(b.stmts.len(), 3);
    assert!(matches!(b.stmts[0].values[0].kind, ValueKind::Map(_)));
    assert_eq!(b.stmts[1].commas, vec![1]);
    assert!(b.stmts[2].block.as_ref().unwrap().stmts.is_empty());
}

#[test]
fn trailing_comma_continues_the_statement() {
    let f = parse_ok("cpu sockets 2,\n    cores 112, numa 2\nmemory 1 TiB\n");
    assert_eq!(f.stmts.len(), 2);
    assert_eq!(f.stmts[0].values.len(), 6);
}

#[test]
fn errors_are_located_and_recovered() {
    let out = errors("a 1\nb 2zorks\nc {\n  d @\n  e 3Gbs\n}\nf 4\n");
    assert!(out.contains("t.orr:2:4"), "{out}");
    assert!(out.contains("unknown unit `zorks`"), "{out}");
    assert!(out.contains("t.orr:4:5"), "{out}");
    assert!(out.contains("t.orr:5:6"), "{out}");
    assert!(
        out.contains("did you mean `Gbps`?") || out.contains("did you mean `GB/s`?"),
        "{out}"
    );
}

#[test]
fn unclosed_things_are_reported() {
    assert!(errors("a {\n b 1\n").contains("never closed"));
    assert!(errors("a [1, 2\n").contains("expected"));
    assert!(errors("a \"open\n").contains("unterminated string"));
    assert!(errors("}\n").contains("unexpected `}`"));
}

#[test]
fn deep_nesting_is_an_error_not_a_crash() {
    let deep = "a ".to_string() + &"[".repeat(100_000) + &"]".repeat(100_000) + "\n";
    assert!(errors(&deep).contains("nesting deeper than 64"));
    let blocks = "a {".repeat(50_000);
    assert!(errors(&blocks).contains("nesting deeper than 64"));
}

#[test]
fn fmt_is_canonical() {
    let src = "#header\n\n\nnode   a{\n cpu sockets 2 ,cores 8 # trailing\n\n\n  memory 80GiB\n  labels {\"k\":\"v\"}\n  # closing\n}\n";
    let f = parse_ok(src);
    let out = format(&f).unwrap();
    assert_eq!(
        out,
        "# header\n\nnode a {\n  cpu sockets 2, cores 8  # trailing\n\n  memory 80 GiB\n  labels { \"k\": \"v\" }\n  # closing\n}\n"
    );
    assert_eq!(format(&parse_ok(&out)).unwrap(), out);
}

#[test]
fn fmt_refuses_to_drop_comments() {
    let f = parse_ok("a [1, # one\n 2]\n");
    assert!(format(&f).is_err());
}
