//! A cluster's `storage NAME { ... }` targets: where checkpoints and spills go, attached to
//! racks or the spine, with their bandwidth and latency.

use super::*;
use crate::diag::Diagnostic;
use crate::scenario::reader::{self as rd, Args, Cx};
use crate::scenario::schema;
use crate::syntax::ast::Stmt;

/// The span of the value after `attach` in a storage block.
pub(super) fn attach_span(s: &Stmt) -> Option<Span> {
    let blk = s.block.as_ref()?;
    let st = blk.stmts.iter().find(|x| x.key.name == "attach")?;
    st.values.first().map(|v| v.span)
}

/// `storage NAME { ... }`. `None` when it has no usable name or block, or repeats a name; a
/// storage with other errors is still returned (with placeholder figures, never seen: the
/// errors withhold the Spec) so that its index and name stay in place for checkpoints.
pub(super) fn storage(
    cx: &mut Cx,
    a: &mut Args,
    s: &Stmt,
    declared: &[Storage],
) -> Option<Storage> {
    let nv = a.req("a storage name")?;
    let name = rd::ident(cx, nv, "a storage name")?;
    if let Some(first) = declared.iter().find(|x| x.name == name) {
        cx.push(
            Diagnostic::error(nv.span, format!("storage `{name}` is declared twice"))
                .with_secondary(first.span, "first declared here"),
        );
        return None;
    }
    let blk = cx.block(s)?;
    let mut bandwidth = None;
    let mut attach = None;
    let mut latency = None;
    let mut source = None;
    cx.each(
        &blk.stmts,
        schema::STORAGE,
        "a storage block",
        |cx, s2, def2| {
            cx.no_block(s2);
            let mut b = Args::new(s2, def2);
            let _ = (|| -> Option<()> {
                match def2.key {
                    "bandwidth" => bandwidth = Some(rd::bandwidth(cx, b.req("a bandwidth")?)?),
                    "attach" => {
                        let k = rd::choice(
                            cx,
                            b.req("`fabric` or `node_local`")?,
                            schema::ATTACH_KINDS,
                            "storage attachment",
                        )?;
                        attach = Some(if k == "fabric" {
                            Attach::Fabric
                        } else {
                            Attach::NodeLocal
                        });
                    }
                    "latency" => latency = Some(rd::duration(cx, b.req("a time")?)?),
                    "source" => {
                        source = Some(rd::string(cx, b.req("a source in quotes")?)?.to_string())
                    }
                    _ => {}
                }
                Some(())
            })();
            b.finish(cx);
        },
    );
    let given = |key: &str| blk.stmts.iter().any(|x| x.key.name == key);
    let mut missing = |what: &str, help: &str| {
        cx.push(
            Diagnostic::error(nv.span, format!("storage `{name}` needs `{what}`"))
                .with_help(help.to_string()),
        );
    };
    if !given("bandwidth") {
        missing(
            "bandwidth",
            "its read and write bandwidth per direction, such as `bandwidth 200 GB/s`",
        );
    }
    if !given("attach") {
        missing(
            "attach",
            "`attach fabric` (one shared system behind the fabric) or `attach node_local` (a drive in every node)",
        );
    }
    Some(Storage {
        name: name.to_string(),
        bandwidth: bandwidth.unwrap_or(Bandwidth(0.0)),
        attach: attach.unwrap_or(Attach::NodeLocal),
        latency: latency.unwrap_or(DEFAULT_STORAGE_LATENCY),
        source,
        span: nv.span,
    })
}
