//! Values: a word or call, a number with its unit, a list, a map; and the numbers, sizes
//! and dimensions inside them. Errors are recovered as the statements' are (`parse.rs`).

use super::*;

impl Parser {
    pub(super) fn value<'a>(&mut self, i: In<'a>) -> R<'a, Value> {
        self.node(&i)?;
        let start = off(&i);
        let c = peek(&i).unwrap_or('\0');
        let (rest, kind) = match c {
            '"' => match string_lit(i) {
                Ok((rest, s)) => (rest, ValueKind::Str(s)),
                Err(e) => return Err(e.into_perr(start)),
            },
            '[' => self.list(i)?,
            '{' => self.map(i)?,
            '-' | '0'..='9' => self.numeric(i)?,
            c if c.is_ascii_alphabetic() || c == '_' => self.word(i)?,
            _ => return Err(self.err(&i, format!("expected a value, found {}", found(&i)))),
        };
        Ok((
            rest,
            Value {
                kind,
                span: self.span(start, off(&rest)),
            },
        ))
    }

    /// An identifier, a pattern `r[0..3]` or a call `f(a, b)`.
    pub(super) fn word<'a>(&mut self, i: In<'a>) -> R<'a, ValueKind> {
        let (i, name) = self
            .ident(i)
            .map_err(|e| e.unwrap_or_else(|| self.err(&i, "expected a name")))?;
        let name = name.fragment().to_string();
        match peek(&i) {
            Some('[') => {
                let j = advance(i, 1);
                let (j, lo) = self.uint(j)?;
                let j = self.expect(j, "..", "`..` in a name pattern such as `r[0..31]`")?;
                let (j, hi) = self.uint(j)?;
                let j = self.expect(j, "]", "`]` closing the name pattern")?;
                Ok((j, ValueKind::Pattern { base: name, lo, hi }))
            }
            Some('(') => {
                self.enter(&i)?;
                let mut j = self.skip_all(advance(i, 1));
                let mut args: Vec<Vec<Value>> = Vec::new();
                let mut group = Vec::new();
                loop {
                    match peek(&j) {
                        Some(')') => {
                            j = advance(j, 1);
                            break;
                        }
                        Some(',') => {
                            if group.is_empty() {
                                return Err(self.err(&j, "expected a value before `,`"));
                            }
                            args.push(std::mem::take(&mut group));
                            j = advance(j, 1);
                        }
                        None => {
                            return Err(self.err(
                                &j,
                                format!(
                                    "expected `)` to close `{name}(`, found the end of the file"
                                ),
                            ));
                        }
                        _ => {
                            let (rest, v) = self.value(j)?;
                            group.push(v);
                            j = rest;
                        }
                    }
                    j = self.skip_all(j);
                }
                if !group.is_empty() {
                    args.push(group);
                }
                self.depth -= 1;
                Ok((j, ValueKind::Call { name, args }))
            }
            _ => Ok((i, ValueKind::Ident(name))),
        }
    }

    pub(super) fn list<'a>(&mut self, i: In<'a>) -> R<'a, ValueKind> {
        self.enter(&i)?;
        let mut j = self.skip_all(advance(i, 1));
        let mut items = Vec::new();
        loop {
            if peek(&j) == Some(']') {
                j = advance(j, 1);
                break;
            }
            if peek(&j).is_none() {
                return Err(self.err(
                    &j,
                    "expected `]` to close the list, found the end of the file",
                ));
            }
            let (rest, v) = self.value(j)?;
            items.push(v);
            j = self.skip_all(rest);
            match peek(&j) {
                Some(',') => j = self.skip_all(advance(j, 1)),
                Some(']') => {}
                _ => {
                    return Err(self.err(
                        &j,
                        format!("expected `,` or `]` in a list, found {}", found(&j)),
                    ));
                }
            }
        }
        self.depth -= 1;
        Ok((j, ValueKind::List(items)))
    }

    pub(super) fn map<'a>(&mut self, i: In<'a>) -> R<'a, ValueKind> {
        self.enter(&i)?;
        let mut j = self.skip_all(advance(i, 1));
        let mut entries = Vec::new();
        loop {
            if peek(&j) == Some('}') {
                j = advance(j, 1);
                break;
            }
            let kstart = off(&j);
            let (rest, name, quoted) = if peek(&j) == Some('"') {
                let (rest, s) = string_lit(j).map_err(|e| e.into_perr(kstart))?;
                (rest, s, true)
            } else {
                match self.ident(j) {
                    Ok((rest, n)) => (rest, n.fragment().to_string(), false),
                    Err(Some(e)) => return Err(e),
                    Err(None) => {
                        return Err(self.err(
                            &j,
                            format!("expected a map key or `}}`, found {}", found(&j)),
                        ));
                    }
                }
            };
            let key = MapKey {
                name,
                quoted,
                span: self.span(kstart, off(&rest)),
            };
            let j2 = spaces(rest);
            let j2 = self.expect(j2, ":", "`:` after the map key")?;
            let j2 = self.skip_all(j2);
            let (rest, v) = self.value(j2)?;
            entries.push((key, v));
            j = self.skip_all(rest);
            match peek(&j) {
                Some(',') => j = self.skip_all(advance(j, 1)),
                Some('}') => {}
                _ => {
                    return Err(self.err(
                        &j,
                        format!("expected `,` or `}}` in a map, found {}", found(&j)),
                    ));
                }
            }
        }
        self.depth -= 1;
        Ok((j, ValueKind::Map(entries)))
    }

    /// A number, then what it turns out to be: range, dims, ratio or quantity.
    pub(super) fn numeric<'a>(&mut self, i: In<'a>) -> R<'a, ValueKind> {
        let Ok((j, text)) = number_text(i) else {
            return Err(self.err(&i, format!("expected a number, found {}", found(&i))));
        };
        let num = self.number(&i, text)?;
        let is_int = !text.fragment().contains(['.', 'e', 'E']);
        let rest = j.fragment();
        if is_int && rest.starts_with("..") {
            let k = advance(j, 2);
            let Ok((k, hi_text)) = number_text(k) else {
                return Err(self.err(&k, "expected a whole number after `..`"));
            };
            let lo = parse_int(text.fragment())
                .ok_or_else(|| self.err(&i, "range bound is not a whole number"))?;
            let hi = parse_int(hi_text.fragment())
                .ok_or_else(|| self.err(&hi_text, "range bound is not a whole number"))?;
            return Ok((k, ValueKind::Range { lo, hi }));
        }
        if is_int && rest.starts_with('x') && rest[1..].starts_with(|c: char| c.is_ascii_digit()) {
            let mut dims = vec![self.dim(&i, text.fragment())?];
            let mut k = j;
            while k.fragment().starts_with('x') {
                let (k2, t) = digit1::<_, nom::error::Error<In>>(advance(k, 1))
                    .map_err(|_| self.err(&k, "expected a dimension after `x`"))?;
                dims.push(self.dim(&k, t.fragment())?);
                k = k2;
            }
            if peek(&k).is_some_and(is_ident_char) {
                return Err(self.err(
                    &k,
                    "dimensions are whole numbers joined by `x`, such as `2x2x4`",
                ));
            }
            return Ok((k, ValueKind::Dims(dims)));
        }
        if rest.starts_with(':') && rest[1..].starts_with(|c: char| c.is_ascii_digit()) {
            let k = advance(j, 1);
            let (k, t2) =
                number_text(k).map_err(|_| self.err(&k, "expected a number after `:`"))?;
            let den = self.number(&k, t2)?;
            return Ok((k, ValueKind::Ratio(num, den)));
        }
        // Optional unit, longest match, ending at a word boundary.
        let after = spaces(j);
        let a = after.fragment();
        let unit = crate::units::UNITS
            .iter()
            .map(|(u, _, _)| *u)
            .filter(|u| a.starts_with(u) && !continues_word(&a[u.len()..]))
            .max_by_key(|u| u.len());
        if let Some(u) = unit {
            return Ok((
                advance(after, u.len()),
                ValueKind::Quantity {
                    num,
                    unit: Some(u.to_string()),
                },
            ));
        }
        if peek(&j).is_some_and(|c| c.is_ascii_alphabetic()) {
            let word: String = j
                .fragment()
                .chars()
                .take_while(|c| is_ident_char(*c) || *c == '/')
                .collect();
            let mut e = self.err(&j, format!("unknown unit `{word}`"));
            e.end = e.start + word.len();
            e.help = crate::diag::did_you_mean(&word, crate::units::UNITS.iter().map(|u| u.0));
            return Err(e);
        }
        Ok((j, ValueKind::Quantity { num, unit: None }))
    }

    pub(super) fn number(&self, at: &In, text: In) -> Result<Number, PErr> {
        let t = text.fragment();
        let value: f64 = t
            .replace('_', "")
            .parse()
            .map_err(|_| self.err(at, format!("`{t}` is not a number")))?;
        if !value.is_finite() {
            return Err(self.err(at, format!("`{t}` is too large")));
        }
        Ok(Number {
            text: t.to_string(),
            value,
        })
    }

    pub(super) fn dim(&self, at: &In, t: &str) -> Result<u64, PErr> {
        t.replace('_', "")
            .parse()
            .map_err(|_| self.err(at, format!("dimension `{t}` is too large")))
    }

    pub(super) fn uint<'a>(&self, i: In<'a>) -> R<'a, u64> {
        let (j, t) = digit1::<_, nom::error::Error<In>>(i)
            .map_err(|_| self.err(&i, format!("expected a whole number, found {}", found(&i))))?;
        let v = t
            .fragment()
            .parse()
            .map_err(|_| self.err(&i, "number too large"))?;
        Ok((j, v))
    }
}

/// Whether `rest` continues a word, so that what precedes it is not a whole unit: `h100`,
/// `B-k8` and `s.x` are names, not `h`, `B` or `s` followed by something.
fn continues_word(rest: &str) -> bool {
    let mut c = rest.chars();
    match c.next() {
        Some(x) if is_ident_char(x) || x == '/' => true,
        Some('-' | '.') => c.next().is_some_and(is_ident_char),
        _ => false,
    }
}

fn parse_int(t: &str) -> Option<i64> {
    t.replace('_', "").parse().ok()
}
