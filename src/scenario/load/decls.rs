//! Top-level declarations (`KIND NAME [from BASE | tenant T] { ... }`) and the registry of
//! each kind, where a user's declaration replaces the catalog's of the same name and a
//! `from BASE` variant starts from its base.

use super::*;

/// A top-level declaration: `KIND NAME [from BASE | tenant T] { ... }`.
pub(super) struct Decl<'a> {
    pub(super) name: String,
    pub(super) span: Span,
    pub(super) extra: Option<(String, Span)>,
    pub(super) stmt: &'a Stmt,
    pub(super) origin: Origin,
}

pub(super) fn decl<'a>(
    cx: &mut Cx,
    s: &'a Stmt,
    def: &schema::StmtDef,
    origin: Origin,
    name_optional: bool,
) -> Option<Decl<'a>> {
    let mut a = Args::new(s, def);
    let r = (|| {
        let (name, span) = if name_optional
            && a.stmt
                .values
                .first()
                .is_none_or(|v| !matches!(v.kind, syntax::ValueKind::Ident(_)))
        {
            (String::new(), s.key.span)
        } else {
            let v = a.req("a name")?;
            (rd::ident(cx, v, "a name")?.to_string(), v.span)
        };
        let extra = match def.words.first() {
            Some(w) => match a.opt(w) {
                Some(v) => Some((rd::ident(cx, v, "a name")?.to_string(), v.span)),
                None => None,
            },
            None => None,
        };
        cx.block(s)?;
        Some(Decl {
            name,
            span,
            extra,
            stmt: s,
            origin,
        })
    })();
    a.finish(cx);
    r
}

impl<'a> Decl<'a> {
    pub(super) fn body(&self) -> &'a [Stmt] {
        self.stmt
            .block
            .as_ref()
            .map(|b| b.stmts.as_slice())
            .unwrap_or(&[])
    }
}

/// Declarations of one kind, with catalog entries replaceable by user ones.
pub(super) struct Registry<T> {
    items: BTreeMap<String, (T, Origin, Span)>,
}

impl<T: Clone> Registry<T> {
    pub(super) fn new() -> Self {
        Registry {
            items: BTreeMap::new(),
        }
    }

    pub(super) fn base(&self, cx: &mut Cx, kind: &str, d: &Decl) -> Result<Option<T>, ()> {
        let Some((b, sp)) = &d.extra else {
            return Ok(None);
        };
        match self.items.get(b) {
            Some((t, _, _)) => Ok(Some(t.clone())),
            None => {
                let help = crate::diag::did_you_mean(b, self.items.keys().map(String::as_str))
                    .unwrap_or_else(|| {
                        format!("a base {kind} must be declared before the {kind} that uses it")
                    });
                cx.push(Diagnostic::error(*sp, format!("unknown {kind} `{b}`")).with_help(help));
                Err(())
            }
        }
    }

    pub(super) fn add(
        &mut self,
        cx: &mut Cx,
        kind: &str,
        d: &Decl,
        t: T,
        overridden: &mut Vec<String>,
    ) {
        if let Some((_, origin, first)) = self.items.get(&d.name) {
            if *origin == Origin::User || d.origin == Origin::Catalog {
                cx.push(
                    Diagnostic::error(d.span, format!("{kind} `{}` is declared twice", d.name))
                        .with_secondary(*first, "first declared here")
                        .with_help("use `from` to derive a variant under a new name"),
                );
                return;
            }
            overridden.push(d.name.clone());
        }
        self.items.insert(d.name.clone(), (t, d.origin, d.span));
    }

    pub(super) fn into_map(self) -> BTreeMap<String, T> {
        self.items
            .into_iter()
            .map(|(k, (t, _, _))| (k, t))
            .collect()
    }
}
