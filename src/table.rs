//! The console tables every command prints (`run`, `compare`, `drill`, `sweep`, `merge`,
//! `transports`, `explain`, `catalog`, `calibrate`), built one way on `comfy-table`: a header
//! row over a rule of `-`, columns two spaces apart, the first column (labels) and any named
//! text column left-aligned, every other column right-aligned (numbers), trailing spaces
//! trimmed.
//!
//! The layout depends only on the cells: `comfy-table` is built without its `tty` feature, so
//! it never asks the terminal for its width, and the arrangement is its default (`Disabled`:
//! no wrapping). The same results print the same bytes to a terminal, a pipe or a file.

use comfy_table::{CellAlignment, LineStyle, presets};

/// A table being filled: [`Table::new`] with the column titles, [`Table::row`] per row, then
/// [`Table::render`] (or `Display`).
pub struct Table(comfy_table::Table);

impl Table {
    /// A table with these column titles (units in the titles where the cells carry none).
    pub fn new<S: Into<String>>(header: impl IntoIterator<Item = S>) -> Table {
        let mut style = presets::NOTHING;
        style.header_separator = LineStyle::none().fill('-');
        let mut t = comfy_table::Table::new();
        t.load_style(style);
        t.set_header(header.into_iter().map(Into::into).collect::<Vec<String>>());
        for (i, c) in t.column_iter_mut().enumerate() {
            if i == 0 {
                // No indent: a row starts with its label, so `grep '^label '` finds it.
                c.set_padding((0, 1));
            } else {
                c.set_cell_alignment(CellAlignment::Right);
            }
        }
        Table(t)
    }

    /// The same table with these columns (0-based) left-aligned: text, not numbers.
    pub fn left(mut self, columns: &[usize]) -> Table {
        for &i in columns {
            if let Some(c) = self.0.column_mut(i) {
                c.set_cell_alignment(CellAlignment::Left);
            }
        }
        self
    }

    /// Append a row; a row shorter than the header leaves its last cells empty (a section
    /// heading is a row of one cell).
    pub fn row<S: Into<String>>(&mut self, cells: impl IntoIterator<Item = S>) -> &mut Table {
        self.0
            .add_row(cells.into_iter().map(Into::into).collect::<Vec<String>>());
        self
    }

    /// The table as lines, each ending in a newline.
    pub fn render(&self) -> String {
        self.0.trim_fmt() + "\n"
    }
}

impl std::fmt::Display for Table {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.render())
    }
}

#[cfg(test)]
mod tests {
    use super::Table;

    #[test]
    fn labels_left_numbers_right_under_a_rule() {
        let mut t = Table::new(["item", "kind", "n"]).left(&[1]);
        t.row(["a", "long kind", "5"]);
        t.row(["longer", "x", "12345"]);
        t.row(["heading"]);
        assert_eq!(
            t.render(),
            "item     kind           n\n\
             --------------------------\n\
             a        long kind      5\n\
             longer   x          12345\n\
             heading\n"
        );
    }
}
