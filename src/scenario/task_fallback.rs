//! `fallback label_selector MAP` in task groups and actors: one entry of Ray's
//! `fallback_strategy` (`@ray.remote(label_selector={...}, fallback_strategy=[{"label_selector":
//! {...}}, ...])`, ray-project/ray pull request #56374), written once per option, in order.
//!
//! Ray validates each entry in `python/ray/_private/label_utils.py`
//! (`validate_fallback_strategy`): a non-empty dictionary whose only supported key is
//! `label_selector`, whose selector is validated as a task's. Here the statement takes exactly
//! that key, its map read as the group's own `label_selector`. Ray accepts an empty selector (it
//! passes every node), and so does this.
//!
//! Orrery refuses what Ray would accept but never use, so that every statement does something:
//! a fallback on work without its own `label_selector` (its own option already allows every
//! node that could hold it, so no fallback ever finds a node with room that it did not), and a
//! fallback repeating an earlier option's selector.

use super::reader::{Args, Cx};
use super::workload::{LabelConstraint, label_selector};
use crate::diag::{Diagnostic, Span};

/// The label selector of one `fallback label_selector MAP` statement.
pub(super) fn fallback(cx: &mut Cx, b: &mut Args) -> Option<Vec<LabelConstraint>> {
    let v = b.need("label_selector", "label_selector { KEY: VALUE }")?;
    label_selector(cx, v)
}

/// Whether two selectors ask the same (the same constraints, in any order).
fn same(a: &[LabelConstraint], b: &[LabelConstraint]) -> bool {
    a.len() == b.len() && a.iter().all(|c| b.contains(c))
}

/// Errors for fallbacks that can never be taken: `what` names the work ("task group `t`"),
/// `spans` is where each fallback statement is.
pub(super) fn check(
    cx: &mut Cx,
    what: &str,
    own: &[LabelConstraint],
    fallbacks: &[Vec<LabelConstraint>],
    spans: &[Span],
) {
    if fallbacks.is_empty() {
        return;
    }
    if own.is_empty() {
        cx.push(
            Diagnostic::error(
                spans[0],
                format!(
                    "`fallback` is never taken: {what} has no `label_selector`, so its own option already allows every node"
                ),
            )
            .with_help(
                "give it a `label_selector`; each `fallback label_selector` is tried, in order, when no node the options before it allow has room",
            ),
        );
        return;
    }
    for (k, f) in fallbacks.iter().enumerate() {
        let earlier = if same(f, own) {
            Some("its own `label_selector`".to_string())
        } else {
            fallbacks[..k]
                .iter()
                .position(|g| same(f, g))
                .map(|i| format!("fallback {}", i + 1))
        };
        if let Some(e) = earlier {
            cx.error(
                spans[k],
                format!(
                    "fallback {} of {what} asks the same label selector as {e}, so it is never taken",
                    k + 1
                ),
            );
        }
    }
}
