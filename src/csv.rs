//! CSV fields as the `csv` crate's engine (`csv-core`) writes them, for the data files whose
//! rows are built as text: a field is quoted, its quotes doubled, when it holds a comma, a quote
//! or a line break (`\n` or `\r`), and left as is otherwise.

use csv_core::{QuoteStyle, WriterBuilder};

/// A field inside a row: quoted only when it must be.
pub fn field(s: &str) -> String {
    write_field(s, QuoteStyle::Necessary)
}

/// A field always in quotes (quotes inside doubled), even when empty.
pub fn quoted(s: &str) -> String {
    write_field(s, QuoteStyle::Always)
}

/// The field followed by a delimiter, as inside a row, less the delimiter: a field alone
/// would be finished as a record, and an empty one-field record is written `""`.
fn write_field(s: &str, style: QuoteStyle) -> String {
    let mut w = WriterBuilder::new().quote_style(style).build();
    // Room for every byte doubled, two quotes and the delimiter: nothing is left unwritten.
    let mut out = vec![0u8; 2 * s.len() + 3];
    let (_, read, n) = w.field(s.as_bytes(), &mut out);
    let (_, m) = w.delimiter(&mut out[n..]);
    debug_assert_eq!(read, s.len());
    out.truncate(n + m - 1);
    // Only ASCII quotes are added to valid UTF-8, between whole characters.
    String::from_utf8(out).unwrap_or_default()
}

/// The records of CSV text, as the fields above are written (quotes undone), header first.
/// A last record without its line break still counts.
pub fn records(text: &str) -> Vec<Vec<String>> {
    use csv_core::ReadFieldResult as R;
    let mut rd = csv_core::Reader::new();
    let (mut input, mut field, mut row, mut rows) =
        (text.as_bytes(), Vec::new(), Vec::new(), Vec::new());
    let mut out = [0u8; 4096];
    loop {
        let (res, read, written) = rd.read_field(input, &mut out);
        input = &input[read..];
        field.extend_from_slice(&out[..written]);
        match res {
            // An empty input on the next call is the end of the text.
            R::InputEmpty | R::OutputFull => {}
            R::Field { record_end } => {
                row.push(String::from_utf8_lossy(&field).into_owned());
                field.clear();
                if record_end {
                    rows.push(std::mem::take(&mut row));
                }
            }
            R::End => break,
        }
    }
    rows
}

#[cfg(test)]
mod tests {
    use super::{field, quoted, records};

    #[test]
    fn records_undo_what_fields_write() {
        let text = format!(
            "a,b\n{},{}\n,x",
            field("say \"hi\", two\nlines"),
            quoted("")
        );
        assert_eq!(
            records(&text),
            [
                vec!["a", "b"],
                vec!["say \"hi\", two\nlines", ""],
                vec!["", "x"]
            ]
        );
    }

    #[test]
    fn plain_fields_stay_as_they_are() {
        assert_eq!(field(""), "");
        assert_eq!(field("ray_default"), "ray_default");
        assert_eq!(field("r0.n0 r0.n1"), "r0.n0 r0.n1");
        assert_eq!(field("é µs"), "é µs");
    }

    #[test]
    fn commas_quotes_and_line_breaks_are_quoted() {
        assert_eq!(field("a,b"), "\"a,b\"");
        assert_eq!(field("say \"hi\""), "\"say \"\"hi\"\"\"");
        assert_eq!(field("two\nlines"), "\"two\nlines\"");
        assert_eq!(field("cr\r"), "\"cr\r\"");
        assert_eq!(field("\"\"\""), "\"\"\"\"\"\"\"\"");
    }

    #[test]
    fn quoted_fields_are_always_in_quotes() {
        assert_eq!(quoted(""), "\"\"");
        assert_eq!(quoted("no route"), "\"no route\"");
        assert_eq!(quoted("a \"b\", c"), "\"a \"\"b\"\", c\"");
    }
}
