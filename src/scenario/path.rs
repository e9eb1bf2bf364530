//! Sweep paths: a dotted name for one value of a scenario's syntax tree, and the rewrite that
//! replaces it. Sweeps rewrite the tree *before* resolving (parse-then-resolve), so any value
//! can be swept and every swept variant is validated like a hand-written scenario.
//!
//! A path is a list of segments separated by `.` (written as one name:
//! `cluster.pod.fabric.oversubscription`). Starting from the top-level statements:
//!
//! * a segment `KEY` selects the statement with that keyword; when the next segment is that
//!   statement's name (its first value, a name), it selects it among several (`cluster.pod`,
//!   `workload.pretrain`, `training.llm`, `node.dgx_h100`); the name may be left out when the
//!   block has one statement with that keyword (`rack.node`);
//! * after a statement with a block, the next segment is a keyword inside the block, or an
//!   option word of the statement itself (`training.llm.steps`);
//! * the last segment either ends on a statement without a block, whose first value (after its
//!   name, if the path named it) is replaced (`allreduce 28 GB` ← `...training.llm.allreduce`),
//!   or is an option word of the statement, whose following value is replaced
//!   (`fabric leaf_spine oversubscription 1:1` ← `...fabric.oversubscription`,
//!   `node dgx_h100 x 4` ← `...rack.node.x`).
//!
//! A missing last statement is inserted into its block (`workload.pretrain.policy` adds a
//! `policy` line), and a missing option word is appended to its statement; the resolver then
//! says whether that is allowed. Where several statements match and no name tells them apart,
//! the path is ambiguous (an error). Patterns (`rack r[0..3]`) have no single name: a path
//! passes through them by keyword only, and then changes every rack the pattern declares.
//!
//! Architecture invariant: this module knows the syntax tree only, no meaning.

use crate::syntax::ast::{Ident, Stmt, Value, ValueKind};

/// Where a path leads: statement indices (the first into the top-level list, the others into
/// each statement's block) and what to do there.
#[derive(Debug, Clone, PartialEq)]
enum Action {
    /// Replace `values[index]` of the statement.
    Replace(usize),
    /// Append `word VALUE` to the statement's values.
    AppendOption(String),
    /// Insert `key VALUE` into the statement's block.
    Insert(String),
}

fn name_of(s: &Stmt) -> Option<&str> {
    match s.values.first().map(|v| &v.kind) {
        Some(ValueKind::Ident(n)) => Some(n),
        _ => None,
    }
}

/// Option words of a statement: names followed by a value.
fn option_index(s: &Stmt, word: &str) -> Option<usize> {
    (0..s.values.len().saturating_sub(1))
        .find(|&i| matches!(&s.values[i].kind, ValueKind::Ident(n) if n == word))
}

fn keys(stmts: &[&Stmt]) -> Vec<String> {
    let mut k: Vec<String> = stmts.iter().map(|s| s.key.name.clone()).collect();
    k.sort();
    k.dedup();
    k
}

fn find(
    list: &[&Stmt],
    segs: &[&str],
    done: &[&str],
    top: bool,
) -> Result<(Vec<usize>, Action), String> {
    let here = || {
        if done.is_empty() {
            "the scenario".to_string()
        } else {
            format!("`{}`", done.join("."))
        }
    };
    let k = segs[0];
    let cands: Vec<usize> = (0..list.len()).filter(|&i| list[i].key.name == k).collect();
    if cands.is_empty() {
        if segs.len() == 1 && !top {
            return Err(format!("insert:{k}"));
        }
        let ks = keys(list);
        let help = crate::diag::suggest(k, ks.iter().map(String::as_str))
            .map(|s| format!(" (did you mean `{s}`?)"))
            .unwrap_or_else(|| {
                if ks.is_empty() {
                    String::new()
                } else {
                    format!(" (it has: {})", ks.join(", "))
                }
            });
        return Err(format!("{} has no `{k}` statement{help}", here()));
    }
    // A last segment that is the first value of a statement without a block, followed by a
    // value, is that option rather than the statement's name (`parallel tp 8 dp 2` ←
    // `...parallel.tp`): a name there could only lead to "names a whole statement".
    let option_not_name =
        |s: &Stmt, n: &str| segs.len() == 2 && s.block.is_none() && option_index(s, n) == Some(0);
    let named: Vec<usize> = match segs.get(1) {
        Some(n) => cands
            .iter()
            .copied()
            .filter(|&i| name_of(list[i]) == Some(*n) && !option_not_name(list[i], n))
            .collect(),
        None => Vec::new(),
    };
    let (chosen, rest, by_name) = if named.is_empty() {
        if cands.len() > 1 {
            let names: Vec<String> = cands
                .iter()
                .filter_map(|&i| name_of(list[i]).map(|n| format!("`{k}.{n}`")))
                .collect();
            return Err(format!(
                "{} has {} `{k}` statements; name one{}",
                here(),
                cands.len(),
                if names.is_empty() {
                    String::new()
                } else {
                    format!(": {}", names.join(", "))
                }
            ));
        }
        (cands, &segs[1..], false)
    } else {
        (named, &segs[2..], true)
    };
    let mut done: Vec<&str> = done.to_vec();
    done.extend_from_slice(&segs[..segs.len() - rest.len()]);
    // Later declarations win (a scenario's override of a catalog entry of the same name).
    let mut last_err = None;
    for &i in chosen.iter().rev() {
        match into(list[i], rest, &done, by_name) {
            Ok((mut idx, act)) => {
                idx.insert(0, i);
                return Ok((idx, act));
            }
            Err(e) => last_err = Some(e),
        }
    }
    Err(last_err.unwrap_or_default())
}

fn into(
    s: &Stmt,
    rest: &[&str],
    done: &[&str],
    by_name: bool,
) -> Result<(Vec<usize>, Action), String> {
    let shown = done.join(".");
    let options = || {
        let w: Vec<String> = (0..s.values.len().saturating_sub(1))
            .filter_map(|i| match &s.values[i].kind {
                ValueKind::Ident(n) if i > 0 || !by_name => Some(format!("`{n}`")),
                _ => None,
            })
            .collect();
        if w.is_empty() {
            String::new()
        } else {
            format!(" (its options: {})", w.join(", "))
        }
    };
    let Some(&next) = rest.first() else {
        if let Some(b) = &s.block {
            let inner: Vec<&Stmt> = b.stmts.iter().collect();
            return Err(format!(
                "`{shown}` is a block; name a statement in it: {}",
                keys(&inner).join(", ")
            ));
        }
        let index = usize::from(by_name);
        if by_name || s.values.len() <= index {
            return Err(format!(
                "`{shown}` names a whole statement; add the option to change{}",
                options()
            ));
        }
        return Ok((Vec::new(), Action::Replace(index)));
    };
    if rest.len() == 1
        && let Some(i) = option_index(s, next)
        && (i > 0 || !by_name)
    {
        return Ok((Vec::new(), Action::Replace(i + 1)));
    }
    match &s.block {
        Some(b) => {
            let inner: Vec<&Stmt> = b.stmts.iter().collect();
            match find(&inner, rest, done, false) {
                Err(e) if e.starts_with("insert:") => {
                    Ok((Vec::new(), Action::Insert(e["insert:".len()..].to_string())))
                }
                r => r,
            }
        }
        None if rest.len() == 1 => Ok((Vec::new(), Action::AppendOption(next.to_string()))),
        None => Err(format!(
            "`{shown}` has no block, so `{}` leads nowhere{}",
            rest.join("."),
            options()
        )),
    }
}

/// Replace the value `path` names in `top` (the scenario's top-level statements, in order)
/// with `value`. The value keeps its own span, so the resolver's errors about it point at the
/// `sweep` line. Errors say which segment fails and what was there instead.
pub fn apply(top: &mut [&mut Stmt], path: &str, value: &Value) -> Result<(), String> {
    let segs: Vec<&str> = path.split('.').collect();
    if segs.iter().any(|s| s.is_empty()) {
        return Err(format!("`{path}` is not a path (empty segment)"));
    }
    let (idx, act) = {
        let list: Vec<&Stmt> = top.iter().map(|s| &**s).collect();
        find(&list, &segs, &[], true).map_err(|e| {
            if let Some(k) = e.strip_prefix("insert:") {
                format!("the scenario has no `{k}` statement")
            } else {
                e
            }
        })?
    };
    let mut s: &mut Stmt = top[idx[0]];
    for &i in &idx[1..] {
        s = &mut s
            .block
            .as_mut()
            .expect("a path only descends into blocks")
            .stmts[i];
    }
    match act {
        Action::Replace(i) => s.values[i] = value.clone(),
        Action::AppendOption(w) => {
            s.values.push(Value {
                kind: ValueKind::Ident(w),
                span: value.span,
            });
            s.values.push(value.clone());
        }
        Action::Insert(k) => {
            let b = s.block.as_mut().expect("insertion is into a block");
            b.stmts.push(Stmt {
                key: Ident {
                    name: k,
                    span: value.span,
                },
                values: vec![value.clone()],
                commas: Vec::new(),
                block: None,
                span: value.span,
                leading: Vec::new(),
                trailing_comment: None,
            });
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::syntax::fmt::format;
    use crate::syntax::parse;

    fn rewrite(src: &str, path: &str, val: &str) -> Result<String, String> {
        let (mut f, d) = parse(src, 0);
        assert!(d.is_empty());
        let (v, _) = parse(&format!("x {val}\n"), 1);
        let value = v.stmts[0].values[0].clone();
        let mut top: Vec<&mut Stmt> = f.stmts.iter_mut().collect();
        apply(&mut top, path, &value)?;
        Ok(format(&f).unwrap())
    }

    const SRC: &str = "cluster pod {\n  rack r[0..1] {\n    node dgx_h100 x 4\n  }\n  fabric leaf_spine oversubscription 1:1\n}\n\nworkload a {\n  training llm on pg steps 10 {\n    allreduce 28 GB algo ring\n  }\n}\n\nworkload b {\n  policy spread\n}\n";

    #[test]
    fn paths_name_values_options_and_missing_statements() {
        let r = rewrite(SRC, "cluster.pod.fabric.oversubscription", "2:1").unwrap();
        assert!(r.contains("fabric leaf_spine oversubscription 2:1"), "{r}");
        let r = rewrite(SRC, "cluster.rack.node.x", "8").unwrap();
        assert!(r.contains("node dgx_h100 x 8"), "{r}");
        let r = rewrite(SRC, "cluster.pod.rack.node.dgx_h100.x", "2").unwrap();
        assert!(r.contains("node dgx_h100 x 2"), "{r}");
        let r = rewrite(SRC, "workload.a.training.llm.allreduce", "1 GB").unwrap();
        assert!(r.contains("allreduce 1 GB algo ring"), "{r}");
        let r = rewrite(SRC, "workload.a.training.llm.steps", "99").unwrap();
        assert!(r.contains("training llm on pg steps 99"), "{r}");
        let r = rewrite(SRC, "workload.a.policy", "spread").unwrap();
        assert!(r.contains("  }\n  policy spread\n}\n\nworkload b"), "{r}");
        let r = rewrite(SRC, "workload.b.policy", "ray_default").unwrap();
        assert!(r.contains("policy ray_default"), "{r}");
        let r = rewrite(SRC, "cluster.fabric.latency", "2 us").unwrap();
        assert!(r.contains("oversubscription 1:1 latency 2 us"), "{r}");
        let src = "workload a {\n  training t on pg steps 1 {\n    parallel tp 4 dp 2\n  }\n}\n";
        let r = rewrite(src, "workload.a.training.t.parallel.tp", "8").unwrap();
        assert!(r.contains("parallel tp 8 dp 2"), "{r}");
        let r = rewrite(src, "workload.a.training.t.parallel.dp", "1").unwrap();
        assert!(r.contains("parallel tp 4 dp 1"), "{r}");
    }

    #[test]
    fn bad_paths_say_why() {
        let e = rewrite(SRC, "clustr.pod.fabric", "1").unwrap_err();
        assert!(e.contains("did you mean `cluster`"), "{e}");
        let e = rewrite(SRC, "workload.policy", "spread").unwrap_err();
        assert!(e.contains("2 `workload` statements; name one"), "{e}");
        let e = rewrite(SRC, "cluster.pod", "1").unwrap_err();
        assert!(e.contains("is a block"), "{e}");
        let e = rewrite(SRC, "workload.a.training.llm.allreduce.x.y", "1").unwrap_err();
        assert!(e.contains("leads nowhere"), "{e}");
    }
}
