//! Fuzz the front end: any input must load without panicking, every diagnostic must point
//! inside its file, and text that parses cleanly must survive `fmt` unchanged in meaning.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    let loaded = orrery::load_str("fuzz.orr", text);
    for d in &loaded.diags {
        let len = loaded.sources.file(d.span.file).text.len();
        assert!(d.span.start <= d.span.end && d.span.end <= len);
    }
    let _ = loaded.render(false);
    let (tree, diags) = orrery::syntax::parse(text, 0);
    if diags.is_empty() {
        if let Ok(out) = orrery::syntax::fmt::format(&tree) {
            let (again, d2) = orrery::syntax::parse(&out, 0);
            assert!(d2.is_empty(), "fmt output does not parse");
            // Blank lines are normalised by design; structure and comments must survive.
            assert_eq!(again.structure(), tree.structure(), "fmt changed the tree");
            assert_eq!(again.comments(), tree.comments(), "fmt lost or reordered a comment");
            let twice = orrery::syntax::fmt::format(&again).expect("formatted text formats");
            assert_eq!(twice, out, "fmt is not idempotent");
        }
    }
});
