//! YAML text to a small tree whose every node knows its line and column, so that a wrong value
//! in a cluster YAML is reported where it is. Built on saphyr-parser's event stream (each event
//! comes with its span); the tree is what the readers need and no more: mappings with string
//! keys (in file order, duplicates refused as YAML requires), sequences, and scalars kept as text
//! (`8` and `"8"` alike: Kubernetes quantities are usually quoted).
//!
//! Bounded: nesting deeper than [`MAX_DEPTH`] and more than [`MAX_NODES`] nodes (aliases
//! counted once per use, so a "billion laughs" file is refused) are errors.

use rustc_hash::FxHashSet;
use saphyr_parser::{Event, Parser, ScalarStyle};
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
        anchor: usize,
        entries: Vec<(String, Pos, Node)>,
        /// The keys of `entries`, so that a duplicate is found in constant time (a mapping
        /// may hold hundreds of thousands of keys).
        keys: FxHashSet<String>,
        key: Option<(String, Pos)>,
        merges: Vec<Node>,
    },
    Seq {
        at: Pos,
        anchor: usize,
        items: Vec<Node>,
    },
}

/// The end of the text: its last line and the column after that line's last character. Lines
/// end as YAML says: LF, CRLF or a lone CR (YAML 1.2, 5.4).
fn end_of(text: &str) -> Pos {
    let mut line = 1;
    let mut col = 1;
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '\n' || c == '\r' {
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

/// Every document of the text, in order.
pub fn parse(text: &str) -> Result<Vec<Node>, Error> {
    let mut docs = Vec::new();
    let mut stack: Vec<Frame> = Vec::new();
    // Anchored nodes and their sizes (nodes they hold), so that each use of an alias is counted.
    let mut anchors: HashMap<usize, (Node, usize)> = HashMap::new();
    let mut built = 0usize;
    let end = end_of(text);
    for ev in Parser::new_from_str(text) {
        let (ev, span) = ev.map_err(|e| Error {
            at: within(
                Pos {
                    line: e.marker().line(),
                    col: e.marker().col() + 1,
                },
                end,
            ),
            message: format!("invalid YAML: {}", e.info()),
        })?;
        let at = within(
            Pos {
                line: span.start.line(),
                col: span.start.col() + 1,
            },
            end,
        );
        let done: Option<(Node, usize)> = match ev {
            Event::MappingStart(anchor, _) | Event::SequenceStart(anchor, _) => {
                if stack.len() >= MAX_DEPTH {
                    return Err(error(at, format!("nesting deeper than {MAX_DEPTH} levels")));
                }
                stack.push(if matches!(ev, Event::MappingStart(..)) {
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
            Event::MappingEnd => match stack.pop() {
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
            Event::SequenceEnd => match stack.pop() {
                Some(Frame::Seq { at, anchor, items }) => Some((
                    Node {
                        kind: Kind::Seq(items),
                        at,
                    },
                    anchor,
                )),
                _ => return Err(error(at, "a list ends where none began")),
            },
            Event::Scalar(v, style, anchor, _) => {
                let null = style == ScalarStyle::Plain
                    && matches!(&*v, "" | "~" | "null" | "Null" | "NULL");
                let kind = if null {
                    Kind::Null
                } else {
                    Kind::Str(v.into_owned())
                };
                Some((Node { kind, at }, anchor))
            }
            Event::Alias(id) => {
                let Some((n, size)) = anchors.get(&id) else {
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
        if anchor != 0 {
            anchors.insert(anchor, (node.clone(), size(&node)));
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
        // A node the parser places after the end (an empty key at the end of the text).
        let e = parse(":\n  \n\n?\n  ").unwrap_err();
        assert_eq!(e.at, Pos { line: 5, col: 3 });
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
    fn several_documents() {
        let d = parse("kind: A\n---\nkind: B\n").unwrap();
        assert_eq!(d.len(), 2);
    }
}
