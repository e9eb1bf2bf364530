//! YAML text to a small tree whose every node knows its line and column, so that a wrong value
//! in a cluster YAML is reported where it is. The tree is what the readers need and no more:
//! mappings with string keys (in file order, duplicates refused as YAML requires; YAML 1.1 merge
//! keys `<<` applied), sequences, and scalars kept as text (`8` and `"8"` alike: Kubernetes
//! quantities are usually quoted).
//!
//! Read as Ray reads it: Ray loads cluster files with PyYAML (`yaml.safe_load`), a YAML 1.1
//! parser ported from libyaml, so this reads libyaml's event stream (libyaml-safer, a Rust port
//! of libyaml; each event comes with its marks). Both ignore indentation inside flow
//! collections, which every Ray launcher example relies on (`file_mounts: {` with its closing
//! `}` in column 1); a strict YAML 1.2 parser refuses those files ("invalid indentation").
//!
//! Bounded: nesting deeper than [`MAX_DEPTH`] and more than [`MAX_NODES`] nodes (aliases
//! counted once per use, so a "billion laughs" file is refused) are errors.

use libyaml_safer::{EventData, Parser, ScalarStyle};
use rustc_hash::FxHashSet;
use std::collections::HashMap;

/// Deepest nesting read (the scenario language's own limit).
pub const MAX_DEPTH: usize = 64;
/// Most nodes built, alias expansions included.
pub const MAX_NODES: usize = 1_000_000;

/// A place in the file: line and column, both from 1.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Pos {
    pub line: usize,
    pub col: usize,
}

#[derive(Debug, Clone, PartialEq)]
pub enum Kind {
    /// Entries in file order: key, where the key is, value.
    Map(Vec<(String, Pos, Node)>),
    Seq(Vec<Node>),
    /// A scalar's text; `null`, `~` and an empty plain scalar are [`Kind::Null`].
    Str(String),
    Null,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Node {
    pub kind: Kind,
    pub at: Pos,
}

/// A located problem.
#[derive(Debug, Clone, PartialEq)]
pub struct Error {
    pub at: Pos,
    pub message: String,
}

pub fn error(at: Pos, message: impl Into<String>) -> Error {
    Error {
        at,
        message: message.into(),
    }
}

impl Node {
    /// The value under `key` of a mapping.
    pub fn get(&self, key: &str) -> Option<&Node> {
        match &self.kind {
            Kind::Map(m) => m.iter().find(|(k, _, _)| k == key).map(|(_, _, v)| v),
            _ => None,
        }
    }

    /// What the node is, for messages (`expected a mapping, found a list`).
    pub fn describe(&self) -> &'static str {
        match self.kind {
            Kind::Map(_) => "a mapping",
            Kind::Seq(_) => "a list",
            Kind::Str(_) => "a scalar",
            Kind::Null => "nothing (null)",
        }
    }

    /// The entries of a mapping; `null` reads as an empty one; anything else is an error.
    pub fn entries(&self, what: &str) -> Result<&[(String, Pos, Node)], Error> {
        match &self.kind {
            Kind::Map(m) => Ok(m),
            Kind::Null => Ok(&[]),
            _ => Err(error(
                self.at,
                format!("{what} must be a mapping, found {}", self.describe()),
            )),
        }
    }

    /// The items of a list; `null` reads as an empty one.
    pub fn items(&self, what: &str) -> Result<&[Node], Error> {
        match &self.kind {
            Kind::Seq(s) => Ok(s),
            Kind::Null => Ok(&[]),
            _ => Err(error(
                self.at,
                format!("{what} must be a list, found {}", self.describe()),
            )),
        }
    }

    /// A scalar's text.
    pub fn text(&self, what: &str) -> Result<&str, Error> {
        match &self.kind {
            Kind::Str(s) => Ok(s),
            _ => Err(error(
                self.at,
                format!("{what} must be a single value, found {}", self.describe()),
            )),
        }
    }

    /// A whole number from 0 to `max`.
    pub fn count(&self, what: &str, max: u64) -> Result<u64, Error> {
        let t = self.text(what)?;
        let n: i128 = t.trim().parse().map_err(|_| {
            error(
                self.at,
                format!("{what} must be a whole number, found `{t}`"),
            )
        })?;
        if n < 0 {
            return Err(error(
                self.at,
                format!("{what} must not be negative, found {n}"),
            ));
        }
        if n > i128::from(max) {
            return Err(error(
                self.at,
                format!("{what} is {n}; the most this import reads is {max}"),
            ));
        }
        Ok(n as u64)
    }

    /// A finite number that is not negative.
    pub fn number(&self, what: &str) -> Result<f64, Error> {
        let t = self.text(what)?;
        let x: f64 = t
            .trim()
            .parse()
            .map_err(|_| error(self.at, format!("{what} must be a number, found `{t}`")))?;
        if !x.is_finite() || x < 0.0 {
            return Err(error(
                self.at,
                format!("{what} must be a number of at least 0, found `{t}`"),
            ));
        }
        Ok(x)
    }
}

enum Frame {
    Map {
        at: Pos,
        anchor: Option<String>,
        entries: Vec<(String, Pos, Node)>,
        /// The keys of `entries`, so that a duplicate is found in constant time (a mapping
        /// may hold hundreds of thousands of keys).
        keys: FxHashSet<String>,
        key: Option<(String, Pos)>,
        merges: Vec<Node>,
    },
    Seq {
        at: Pos,
        anchor: Option<String>,
        items: Vec<Node>,
    },
}

/// The end of the text: its last line and the column after that line's last character. Lines
/// end as YAML 1.1 and libyaml say: LF, CRLF, a lone CR, NEL, LS or PS (YAML 1.1, 5.4).
fn end_of(text: &str) -> Pos {
    let mut line = 1;
    let mut col = 1;
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        if matches!(c, '\n' | '\r' | '\u{85}' | '\u{2028}' | '\u{2029}') {
            if c == '\r' && chars.peek() == Some(&'\n') {
                chars.next();
            }
            line += 1;
            col = 1;
        } else {
            col += 1;
        }
    }
    Pos { line, col }
}

/// `at`, or `end` where the parser points past the text (at the end of a text without a final
/// line break it reports the line after).
fn within(at: Pos, end: Pos) -> Pos {
    if at.line > end.line { end } else { at }
}

/// A libyaml mark (line and column from 0) as a [`Pos`].
fn pos(m: libyaml_safer::Mark, end: Pos) -> Pos {
    within(
        Pos {
            line: usize::try_from(m.line).unwrap_or(usize::MAX - 1) + 1,
            col: usize::try_from(m.column).unwrap_or(usize::MAX - 1) + 1,
        },
        end,
    )
}

/// libyaml's words for a syntax error: what it was parsing, then the problem (as PyYAML
/// prints them).
fn syntax_error(e: &libyaml_safer::Error, end: Pos) -> Error {
    let at = e
        .problem_mark()
        .or(e.context_mark())
        .map_or(Pos { line: 1, col: 1 }, |m| pos(m, end));
    let message = match e.context() {
        Some(c) if !c.is_empty() => format!("invalid YAML: {c}: {}", e.problem()),
        _ => format!("invalid YAML: {}", e.problem()),
    };
    Error { at, message }
}

/// Every document of the text, in order.
pub fn parse(text: &str) -> Result<Vec<Node>, Error> {
    let mut docs = Vec::new();
    let mut stack: Vec<Frame> = Vec::new();
    // Anchored nodes and their sizes (nodes they hold), so that each use of an alias is counted.
    let mut anchors: HashMap<String, (Node, usize)> = HashMap::new();
    let mut built = 0usize;
    let end = end_of(text);
    // libyaml-safer 0.3 panics ("unexpected end of input", scanner.rs) on a block scalar
    // whose last line has no line break (found by fuzz/fuzz_targets/raycluster.rs). A final
    // line break changes no value a cluster file holds (only a `|+` scalar's last line), so
    // the text gets one. Its other panics (a tag followed by `,` in a flow collection: "TODO:
    // What is expected here?") are caught quietly (`crate::quiet`) and reported at the end.
    let owned;
    let mut input = if text.is_empty() || text.ends_with(['\n', '\r']) {
        text.as_bytes()
    } else {
        owned = format!("{text}\n");
        owned.as_bytes()
    };
    let mut parser = Parser::new();
    parser.set_input_string(&mut input);
    loop {
        let ev = match crate::quiet::catch(|| parser.next()) {
            Some(Some(ev)) => ev,
            Some(None) => break,
            None => {
                return Err(error(
                    end,
                    "invalid YAML: the YAML parser (libyaml-safer) failed on this text",
                ));
            }
        };
        let ev = ev.map_err(|e| syntax_error(&e, end))?;
        let at = pos(ev.start_mark, end);
        let is_map = matches!(ev.data, EventData::MappingStart { .. });
        let done: Option<(Node, Option<String>)> = match ev.data {
            EventData::MappingStart { anchor, .. } | EventData::SequenceStart { anchor, .. } => {
                if stack.len() >= MAX_DEPTH {
                    return Err(error(at, format!("nesting deeper than {MAX_DEPTH} levels")));
                }
                stack.push(if is_map {
                    Frame::Map {
                        at,
                        anchor,
                        entries: Vec::new(),
                        keys: FxHashSet::default(),
                        key: None,
                        merges: Vec::new(),
                    }
                } else {
                    Frame::Seq {
                        at,
                        anchor,
                        items: Vec::new(),
                    }
                });
                continue;
            }
            EventData::MappingEnd => match stack.pop() {
                Some(Frame::Map {
                    at,
                    anchor,
                    mut entries,
                    mut keys,
                    merges,
                    ..
                }) => {
                    // `<<: *base` (YAML 1.1 merge keys): entries of the base the map lacks.
                    for m in merges {
                        if let Kind::Map(base) = m.kind {
                            for (k, kp, v) in base {
                                if keys.insert(k.clone()) {
                                    entries.push((k, kp, v));
                                }
                            }
                        }
                    }
                    Some((
                        Node {
                            kind: Kind::Map(entries),
                            at,
                        },
                        anchor,
                    ))
                }
                _ => return Err(error(at, "a mapping ends where none began")),
            },
            EventData::SequenceEnd => match stack.pop() {
                Some(Frame::Seq { at, anchor, items }) => Some((
                    Node {
                        kind: Kind::Seq(items),
                        at,
                    },
                    anchor,
                )),
                _ => return Err(error(at, "a list ends where none began")),
            },
            EventData::Scalar {
                value,
                style,
                anchor,
                ..
            } => {
                // YAML 1.1's null (PyYAML's resolver): `~`, `null` in three spellings, nothing.
                let null = style == ScalarStyle::Plain
                    && matches!(value.as_str(), "" | "~" | "null" | "Null" | "NULL");
                let kind = if null { Kind::Null } else { Kind::Str(value) };
                Some((Node { kind, at }, anchor))
            }
            EventData::Alias { anchor } => {
                let Some((n, size)) = anchors.get(&anchor) else {
                    return Err(error(at, "an alias to an unknown anchor"));
                };
                built = built.saturating_add(*size);
                if built > MAX_NODES {
                    return Err(error(
                        at,
                        format!("more than {MAX_NODES} values (aliases counted at each use)"),
                    ));
                }
                let mut n = n.clone();
                n.at = at;
                push(&mut stack, &mut docs, n)?;
                continue;
            }
            _ => None,
        };
        let Some((node, anchor)) = done else { continue };
        built += 1;
        if built > MAX_NODES {
            return Err(error(
                at,
                format!("more than {MAX_NODES} values (aliases counted at each use)"),
            ));
        }
        if let Some(a) = anchor {
            anchors.insert(a, (node.clone(), size(&node)));
        }
        push(&mut stack, &mut docs, node)?;
    }
    Ok(docs)
}

/// Nodes in a tree (bounded by [`MAX_NODES`] through the count kept while building).
fn size(n: &Node) -> usize {
    match &n.kind {
        Kind::Map(m) => 1 + m.iter().map(|(_, _, v)| size(v)).sum::<usize>(),
        Kind::Seq(s) => 1 + s.iter().map(size).sum::<usize>(),
        _ => 1,
    }
}

/// Put a finished node where it belongs: a key, a value, an item, or a document.
fn push(stack: &mut [Frame], docs: &mut Vec<Node>, node: Node) -> Result<(), Error> {
    match stack.last_mut() {
        None => docs.push(node),
        Some(Frame::Seq { items, .. }) => items.push(node),
        Some(Frame::Map {
            entries,
            keys,
            key,
            merges,
            ..
        }) => match key.take() {
            None => {
                let k = match &node.kind {
                    Kind::Str(s) => s.clone(),
                    Kind::Null => String::new(),
                    _ => {
                        return Err(error(
                            node.at,
                            format!(
                                "a mapping key must be a single value, found {}",
                                node.describe()
                            ),
                        ));
                    }
                };
                // `<<` may repeat: each is a merge, not an entry.
                if k != "<<" && !keys.insert(k.clone()) {
                    return Err(error(
                        node.at,
                        format!("the key `{k}` appears twice in one mapping"),
                    ));
                }
                *key = Some((k, node.at));
            }
            Some((k, kp)) => {
                if k == "<<" {
                    match node.kind {
                        Kind::Seq(list) => merges.extend(list),
                        _ => merges.push(node),
                    }
                } else {
                    entries.push((k, kp, node));
                }
            }
        },
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_error_at_the_end_stays_on_the_last_line() {
        // No final line break: the parser's end-of-text position is the line after.
        let e = parse("a: 1\nb: [1,\n  ").unwrap_err();
        assert_eq!(e.at, Pos { line: 3, col: 3 });
        let e = parse("a: 1\rb: [1,\r  ").unwrap_err();
        assert_eq!(e.at, Pos { line: 3, col: 3 });
        // Refused where PyYAML refuses it: a block mapping's key cannot be `:` alone.
        let e = parse(":\n  \n\n?\n  ").unwrap_err();
        assert_eq!(e.at, Pos { line: 1, col: 1 });
        assert_eq!(end_of("a\r\nbc\rd\n"), Pos { line: 4, col: 1 });
    }

    #[test]
    fn positions_and_values() {
        let d = parse("a: 1\nb:\n  - x\n  - \"8\"\nc: ~\n").unwrap();
        assert_eq!(d.len(), 1);
        let b = d[0].get("b").unwrap();
        assert_eq!(b.items("b").unwrap()[1].text("").unwrap(), "8");
        assert_eq!(b.items("b").unwrap()[1].at, Pos { line: 4, col: 5 });
        assert_eq!(d[0].get("c").unwrap().kind, Kind::Null);
    }

    #[test]
    fn a_block_scalar_at_the_end_without_a_line_break_parses() {
        // libyaml-safer panicked here (the fuzzer's find: a ConfigMap's script ending the file).
        let docs = parse("data:\n  train.py: |\n    import").unwrap();
        assert_eq!(docs.len(), 1);
        let docs = parse("a: |+\n  x").unwrap();
        assert_eq!(docs.len(), 1);
    }

    #[test]
    fn syntax_error_is_located() {
        let e = parse("a: [1, 2\nb: 3\n").unwrap_err();
        assert!(e.at.line >= 1 && e.at.col >= 1, "{e:?}");
    }

    #[test]
    fn duplicate_keys_and_merges() {
        let e = parse("a: 1\na: 2\n").unwrap_err();
        assert_eq!(e.at, Pos { line: 2, col: 1 });
        let d = parse("base: &b {x: 1, y: 2}\nt:\n  <<: *b\n  y: 3\n").unwrap();
        let t = d[0].get("t").unwrap();
        assert_eq!(t.get("x").unwrap().text("").unwrap(), "1");
        assert_eq!(t.get("y").unwrap().text("").unwrap(), "3");
    }

    #[test]
    fn alias_bombs_and_deep_nesting_are_refused() {
        let mut s = String::from("a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n");
        for i in 1..9 {
            let p = i - 1;
            s.push_str(&format!("a{i}: &a{i} [*a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}]\n"));
        }
        assert!(parse(&s).unwrap_err().message.contains("aliases"));
        let deep = "[".repeat(200) + &"]".repeat(200);
        assert!(parse(&deep).is_err());
    }

    #[test]
    fn what_pyyaml_reads_is_read() {
        // Ray's launcher examples: a flow mapping whose comment lines and closing brace are
        // less indented than YAML 1.2 allows; a list not indented under its key; a comment
        // indented past the value; folded block scalars in a list.
        let d = parse(
            "file_mounts: {\n#    \"/a\": \"/b\",\n}\nsetup_commands: []\n    # - pip install x\nk:\n- a\n- >-\n  folded\n  text\n",
        )
        .unwrap();
        assert_eq!(d[0].get("file_mounts").unwrap().kind, Kind::Map(vec![]));
        let k = d[0].get("k").unwrap().items("k").unwrap();
        assert_eq!(k[1].text("").unwrap(), "folded text");
        assert_eq!(k[1].at, Pos { line: 8, col: 3 });
        // YAML 1.1 line breaks (NEL) end a line as libyaml and PyYAML count them.
        assert_eq!(end_of("a\u{85}b"), Pos { line: 2, col: 2 });
        // A tab where a block scalar's indentation is expected: PyYAML refuses it too.
        let e = parse("k: |\n\tfoo\n").unwrap_err();
        assert_eq!(e.at, Pos { line: 2, col: 1 });
        assert!(e.message.contains("tab"), "{}", e.message);
    }

    #[test]
    fn several_documents() {
        let d = parse("kind: A\n---\nkind: B\n").unwrap();
        assert_eq!(d.len(), 2);
    }
}
