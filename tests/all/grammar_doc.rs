//! Keeps grammar/orrery.md true: its examples parse and validate, every word the schema accepts
//! appears in its productions, and every word its productions quote is one the schema knows.

use orrery::scenario::schema;
use std::collections::BTreeSet;

fn doc() -> String {
    std::fs::read_to_string("grammar/orrery.md").expect("grammar/orrery.md")
}

/// Fenced blocks of the given info string.
fn blocks(doc: &str, info: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur: Option<String> = None;
    for line in doc.lines() {
        match &mut cur {
            None if line.trim_end() == format!("```{info}") => cur = Some(String::new()),
            Some(b) if line.trim_end() == "```" => {
                out.push(std::mem::take(b));
                cur = None;
            }
            Some(b) => {
                b.push_str(line);
                b.push('\n');
            }
            None => {}
        }
    }
    out
}

#[test]
fn examples_validate() {
    let d = doc();
    let full = blocks(&d, "orr");
    let syntax = blocks(&d, "orr-syntax");
    assert!(
        full.len() >= 4 && syntax.len() >= 2,
        "examples went missing"
    );
    for ex in full {
        let l = orrery::load_str("grammar example", &ex);
        assert!(
            !l.has_errors(),
            "example does not validate:\n{ex}\n{}",
            l.render(false)
        );
    }
    for ex in syntax {
        let (_, diags) = orrery::syntax::parse(&ex, 0);
        assert!(diags.is_empty(), "example does not parse:\n{ex}\n{diags:?}");
    }
}

/// Every word the schema knows.
fn schema_words() -> BTreeSet<&'static str> {
    let mut w = BTreeSet::new();
    for (_, defs) in schema::ALL {
        for d in *defs {
            w.insert(d.key);
            w.extend(d.words.iter().copied());
        }
    }
    for list in schema::VALUE_WORDS {
        w.extend(list.iter().copied());
    }
    w.extend(schema::FIGURE_WORDS.iter().copied());
    w.extend(orrery::scenario::experiment::SWEEP_PARAMS.iter().copied());
    w
}

/// Quoted words (`"memory"`) inside the EBNF blocks.
fn doc_words(d: &str) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    for b in blocks(d, "ebnf") {
        for (k, part) in b.split('"').enumerate() {
            if k % 2 == 1
                && part
                    .chars()
                    .next()
                    .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
                && part.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
            {
                out.insert(part.to_string());
            }
        }
    }
    out
}

#[test]
fn every_schema_word_is_documented() {
    let d = doc_words(&doc());
    let missing: Vec<&str> = schema_words()
        .into_iter()
        .filter(|w| !d.contains(*w))
        .collect();
    assert!(
        missing.is_empty(),
        "grammar/orrery.md does not mention: {missing:?}"
    );
}

#[test]
fn every_documented_word_is_known() {
    // Lexical words of the surface syntax, not schema keywords.
    let lexical = ["_", "x", "e", "E", "n", "t"];
    let known = schema_words();
    let unknown: Vec<String> = doc_words(&doc())
        .into_iter()
        .filter(|w| !known.contains(w.as_str()) && !lexical.contains(&w.as_str()))
        .collect();
    assert!(
        unknown.is_empty(),
        "grammar/orrery.md documents words the schema does not accept: {unknown:?}"
    );
}

#[test]
fn every_unit_is_documented() {
    let d = doc();
    for (u, _, _) in orrery::units::UNITS {
        assert!(
            d.contains(&format!("`{u}`")),
            "unit `{u}` is not in the units table"
        );
    }
}
