//! One-way layers (issue 43): ARCHITECTURE.md lists `src`'s top-level modules in one order,
//! lowest first, and each module may name only modules listed before it. This test reads that
//! list and every `src` file's `crate::`/`orrery::` paths (comments and test code left out:
//! unit tests may load scenarios through the layers above) and fails on a path that names a
//! module listed later, on a module missing from the list, or on a name listed twice. Since
//! the list is one order, no two modules can import each other, directly or round a loop.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// The crate root's re-exports, by the module they come from.
const ROOT_ITEMS: &[(&str, &str)] = &[
    ("load_str", "load"),
    ("load_str_with", "load"),
    ("load_file", "load"),
    ("load_file_with", "load"),
];

/// The module order: the words of the fenced block after the "Layers" marker line.
fn order() -> Vec<String> {
    let doc = std::fs::read_to_string("ARCHITECTURE.md").unwrap();
    let start = doc
        .find("<!-- layers: lowest first -->")
        .expect("ARCHITECTURE.md has the layers marker");
    let rest = &doc[start..];
    let open = rest.find("```").expect("a fenced block follows the marker");
    let body = &rest[open + 3..];
    let body = &body[body.find('\n').unwrap() + 1..];
    let close = body.find("```").unwrap();
    body[..close]
        .lines()
        .map(|l| l.split(" -- ").next().unwrap_or(""))
        .flat_map(|l| l.split_whitespace())
        .map(String::from)
        .collect()
}

/// `src`'s top-level modules: its folders and files but `main.rs` and `lib.rs`.
fn modules() -> BTreeSet<String> {
    std::fs::read_dir("src")
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter_map(|p| {
            let name = p.file_name()?.to_str()?.to_string();
            if p.is_dir() {
                Some(name)
            } else {
                name.strip_suffix(".rs")
                    .filter(|n| *n != "main" && *n != "lib")
                    .map(String::from)
            }
        })
        .collect()
}

/// Where the literal starting at `i` ends (one past its closing quote), for `"…"`, `r#"…"#`
/// and `b"…"`; `None` if `i` starts none.
fn string_end(b: &[u8], i: usize) -> Option<usize> {
    let mut j = i;
    if b[j] == b'b' {
        j += 1;
    }
    let raw = b.get(j) == Some(&b'r');
    if raw {
        j += 1;
    }
    let hashes = b[j..].iter().take_while(|c| **c == b'#').count();
    j += hashes;
    if b.get(j) != Some(&b'"') || (!raw && hashes > 0) {
        return None;
    }
    if i > 0 && (b[i - 1].is_ascii_alphanumeric() || b[i - 1] == b'_') && j > i {
        return None;
    }
    j += 1;
    while j < b.len() {
        if !raw && b[j] == b'\\' {
            j += 2;
            continue;
        }
        if b[j] == b'"' && b[j + 1..].iter().take_while(|c| **c == b'#').count() >= hashes {
            return Some(j + 1 + hashes);
        }
        j += 1;
    }
    Some(b.len())
}

/// Where the character literal starting at `i` ends, if one does (`'x'`, `'\n'`, `'\''`;
/// not a lifetime).
fn char_end(text: &str, i: usize) -> Option<usize> {
    let rest = text.get(i..)?.strip_prefix('\'')?;
    let mut cs = rest.char_indices();
    let (_, c) = cs.next()?;
    if c == '\\' {
        let (k, _) = cs.next()?;
        return rest[k + 1..].find('\'').map(|e| i + 1 + k + 1 + e + 1);
    }
    let (k, q) = cs.next()?;
    (q == '\'').then_some(i + 1 + k + 1)
}

/// The code of `text`: comments and literals blanked, and the items under `#[cfg(test)]` (a test module
/// or a test-only `use`) cut out. Strings and characters are skipped while matching braces.
fn code(text: &str) -> String {
    let b = text.as_bytes();
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    while i < b.len() {
        if b[i..].starts_with(b"//") {
            i += b[i..]
                .iter()
                .position(|c| *c == b'\n')
                .unwrap_or(b.len() - i);
        } else if b[i..].starts_with(b"/*") {
            i += 2 + text[i + 2..].find("*/").map_or(b.len() - i - 2, |e| e + 2);
        } else if b[i..].starts_with(b"#[cfg(test)]") {
            i = item_end(text, i + "#[cfg(test)]".len());
        } else if let Some(e) = char_end(text, i).or_else(|| string_end(b, i)) {
            out.push_str("\"\"");
            i = e;
        } else {
            let c = text[i..].chars().next().unwrap();
            out.push(c);
            i += c.len_utf8();
        }
    }
    out
}

/// One past the end of the item starting after `i`: its first `;` outside braces, or the
/// brace that closes its first `{`.
fn item_end(text: &str, mut i: usize) -> usize {
    let b = text.as_bytes();
    let mut depth = 0usize;
    while i < b.len() {
        if let Some(e) = char_end(text, i).or_else(|| string_end(b, i)) {
            i = e;
            continue;
        }
        match b[i] {
            b'/' if b.get(i + 1) == Some(&b'/') => {
                i += b[i..]
                    .iter()
                    .position(|c| *c == b'\n')
                    .unwrap_or(b.len() - i);
                continue;
            }
            b'{' => depth += 1,
            b'}' => {
                depth -= 1;
                if depth == 0 {
                    return i + 1;
                }
            }
            b';' if depth == 0 => return i + 1,
            _ => {}
        }
        i += 1;
    }
    b.len()
}

/// The modules `code` names: `crate::M`, `orrery::M` and the names inside `crate::{…}`.
fn named(code: &str, modules: &BTreeSet<String>) -> BTreeSet<String> {
    let root: BTreeMap<&str, &str> = ROOT_ITEMS.iter().copied().collect();
    let mut out = BTreeSet::new();
    let mut add = |w: &str| {
        let w = root.get(w).copied().unwrap_or(w);
        if modules.contains(w) {
            out.insert(w.to_string());
        }
    };
    for prefix in ["crate::", "orrery::"] {
        for (at, _) in code.match_indices(prefix) {
            let before = code[..at].chars().next_back();
            if before.is_some_and(|c| c.is_alphanumeric() || c == '_') {
                continue;
            }
            let rest = &code[at + prefix.len()..];
            if let Some(group) = rest.strip_prefix('{') {
                let inner = &group[..group.find('}').unwrap_or(group.len())];
                for part in inner.split(',') {
                    let w = part.trim().split("::").next().unwrap_or("");
                    add(w.split_whitespace().next().unwrap_or(""));
                }
            } else {
                let end = rest
                    .find(|c: char| !(c.is_alphanumeric() || c == '_'))
                    .unwrap_or(rest.len());
                add(&rest[..end]);
            }
        }
    }
    out
}

fn walk(dir: &Path, out: &mut Vec<std::path::PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            walk(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

#[test]
fn layers_are_one_way() {
    let order = order();
    let modules = modules();
    let mut errors = Vec::new();
    let mut rank = BTreeMap::new();
    for (i, m) in order.iter().enumerate() {
        if !modules.contains(m) {
            errors.push(format!(
                "ARCHITECTURE.md's layers name `{m}`, which is not in src/"
            ));
        }
        if rank.insert(m.clone(), i).is_some() {
            errors.push(format!("ARCHITECTURE.md's layers name `{m}` twice"));
        }
    }
    for m in &modules {
        if !rank.contains_key(m) {
            errors.push(format!(
                "src/{m} is not in ARCHITECTURE.md's layers: put it after what it uses"
            ));
        }
    }
    let mut paths = Vec::new();
    walk(Path::new("src"), &mut paths);
    paths.sort();
    for p in paths {
        let rel = p.strip_prefix("src").unwrap();
        let name = rel.to_str().unwrap().replace('\\', "/");
        if name.ends_with("_tests.rs") || name == "main.rs" || name == "lib.rs" {
            continue;
        }
        let top = name.split('/').next().unwrap().trim_end_matches(".rs");
        let Some(&mine) = rank.get(top) else { continue };
        let text = std::fs::read_to_string(&p).unwrap();
        for m in named(&code(&text), &modules) {
            if m != top && rank.get(&m).is_some_and(|&r| r > mine) {
                errors.push(format!(
                    "src/{name} names `{m}`, a layer above `{top}` (ARCHITECTURE.md, Layers)"
                ));
            }
        }
    }
    assert!(errors.is_empty(), "{}", errors.join("\n"));
}

#[test]
fn the_path_reader_sees_imports_and_skips_comments_strings_and_tests() {
    let modules: BTreeSet<String> = ["sim", "plot", "units", "load", "cli"]
        .into_iter()
        .map(String::from)
        .collect();
    let text = r#"
use crate::{plot::Bar, units};
// crate::cli in a comment
/* crate::cli in a block */
const S: &str = "crate::cli";
const C: char = '{';
const Q: char = '"';
fn f() -> f64 { orrery::sim::run(); crate::load_str("a", "") }
#[cfg(test)]
mod tests {
    fn g() { let _ = ('}', '\'', "}"); crate::cli::main(); }
}
"#;
    let got = named(&code(text), &modules);
    let want: BTreeSet<String> = ["load", "plot", "sim", "units"]
        .into_iter()
        .map(String::from)
        .collect();
    assert_eq!(got, want);
}
