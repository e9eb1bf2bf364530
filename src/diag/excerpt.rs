//! The few source lines one diagnostic shows, as a small file of its own.
//!
//! `codespan-reporting` prints whole lines and walks every line a label spans. Handed the
//! whole source, one diagnostic on a 500 KB line printed 500 KB, so 50,000 errors on one line
//! printed 25 GB (issue 42), and a label over a million-line block walked a million lines.
//! An [`Excerpt`] holds only the lines the renderer will print, each line longer than
//! [`MAX_LINE_BYTES`] cut to a window around what the labels point at (`…` marks a cut), and
//! tells the renderer the original line and column numbers, so a diagnostic costs time and
//! memory in proportion to what it prints. For ordinary lines the output is the same, byte for
//! byte, as rendering over the whole file (`tests::same_as_whole_file` checks it).
//!
//! The lines kept are those the renderer prints with its default configuration: each label's
//! first and last line, and for a label over several lines the three after its first and the
//! one before its last (`start_context_lines`, `end_context_lines`). A one-line gap between
//! kept lines is kept too (the renderer prints that line rather than a break), and a longer
//! gap becomes two empty placeholder lines, so the renderer still draws its `·` break there.

use super::{FileId, SourceMap};
use codespan_reporting::files::{Error, Files};
use std::collections::BTreeSet;
use std::ops::Range;

/// Lines longer than this (in bytes) are shown as a window of this many bytes.
pub const MAX_LINE_BYTES: usize = 512;
/// How much of a long line the window shows before the first place a label points at.
const BEFORE: usize = 128;
/// Marks where a long line was cut.
const CUT: &str = "…";
/// The renderer's default `start_context_lines` and `end_context_lines`.
const START_CONTEXT: usize = 3;
const END_CONTEXT: usize = 1;

/// One line of an excerpt.
struct Line {
    /// Its bytes in the excerpt's text (with the newline, as the renderer expects).
    range: Range<usize>,
    /// Its line number in the original file (1-based).
    number: usize,
    /// Its index in the original file; `None` for a placeholder standing for a gap.
    index: Option<usize>,
    /// The window of the original text it shows.
    window: Range<usize>,
    /// Bytes of `…` before the window's text in `range`.
    prefix: usize,
    /// Characters of the original line before the window (for columns).
    col_base: usize,
}

/// The shown lines of one file.
struct Part {
    file: FileId,
    text: String,
    lines: Vec<Line>,
}

/// What one diagnostic shows of the sources: a `codespan_reporting::files::Files` over only
/// those lines, with the original names, line numbers and columns.
pub(super) struct Excerpt<'m> {
    map: &'m SourceMap,
    parts: Vec<Part>,
}

impl<'m> Excerpt<'m> {
    /// The excerpt for labels at `ranges` (byte ranges of the original files, clamped to them).
    pub fn new(map: &'m SourceMap, ranges: &[(FileId, Range<usize>)]) -> Excerpt<'m> {
        let mut files: Vec<FileId> = ranges.iter().map(|r| r.0).collect();
        files.sort_unstable();
        files.dedup();
        let parts = files
            .into_iter()
            .map(|f| {
                let mine: Vec<Range<usize>> = ranges
                    .iter()
                    .filter(|r| r.0 == f)
                    .map(|r| r.1.clone())
                    .collect();
                part(map, f, &mine)
            })
            .collect();
        Excerpt { map, parts }
    }

    /// Where an original byte offset of `file` is in the excerpt (inside its line's window).
    pub fn offset(&self, file: FileId, at: usize) -> usize {
        let Some(p) = self.part(file) else {
            return 0;
        };
        let f = self.map.file(file);
        let index = line_of(&f.line_starts, at.min(f.text.len()));
        let Some(l) = p
            .lines
            .iter()
            .filter(|l| l.index.is_some())
            .min_by_key(|l| l.index.map(|i| i.abs_diff(index)))
        else {
            return 0;
        };
        let at = at.clamp(l.window.start, l.window.end);
        l.range.start + l.prefix + (at - l.window.start)
    }

    fn part(&self, file: FileId) -> Option<&Part> {
        self.parts.iter().find(|p| p.file == file)
    }

    fn lines(&self, file: FileId) -> Result<&[Line], Error> {
        self.part(file)
            .map(|p| p.lines.as_slice())
            .ok_or(Error::FileMissing)
    }
}

/// Index of the line holding byte `at`.
fn line_of(starts: &[usize], at: usize) -> usize {
    starts.partition_point(|&s| s <= at).saturating_sub(1)
}

/// The largest char boundary of `text` at or before `i`.
fn floor_boundary(text: &str, mut i: usize) -> usize {
    i = i.min(text.len());
    while !text.is_char_boundary(i) {
        i -= 1;
    }
    i
}

fn part(map: &SourceMap, file: FileId, ranges: &[Range<usize>]) -> Part {
    let f = map.file(file);
    let starts = &f.line_starts;
    let line_range = |i: usize| starts[i]..starts.get(i + 1).copied().unwrap_or(f.text.len());
    let mut kept = BTreeSet::new();
    for r in ranges {
        let (s, e) = (line_of(starts, r.start), line_of(starts, r.end));
        kept.insert(s);
        kept.insert(e);
        if e > s {
            kept.extend(s + 1..=(s + START_CONTEXT).min(e));
            kept.extend(e.saturating_sub(END_CONTEXT).max(s)..e);
        }
    }
    let gaps: Vec<usize> = kept
        .iter()
        .zip(kept.iter().skip(1))
        .filter(|(a, b)| **b - **a == 2)
        .map(|(a, _)| a + 1)
        .collect();
    kept.extend(gaps);
    let mut text = String::new();
    let mut lines = Vec::with_capacity(kept.len() + 2);
    let mut prev: Option<usize> = None;
    for &i in &kept {
        if let Some(p) = prev.filter(|&p| i - p > 2) {
            // Two placeholders: the renderer draws a break where lines are missing.
            for number in [p + 2, i] {
                let at = text.len();
                text.push('\n');
                lines.push(Line {
                    range: at..text.len(),
                    number,
                    index: None,
                    window: 0..0,
                    prefix: 0,
                    col_base: 0,
                });
            }
        }
        prev = Some(i);
        let whole = line_range(i);
        let at = text.len();
        let (window, prefix) = if whole.len() <= MAX_LINE_BYTES {
            text.push_str(&f.text[whole.clone()]);
            (whole.clone(), 0)
        } else {
            let first = ranges
                .iter()
                .flat_map(|r| [r.start, r.end])
                .filter(|p| whole.contains(p))
                .min()
                .unwrap_or(whole.start);
            let w0 = floor_boundary(&f.text, first.saturating_sub(BEFORE).max(whole.start));
            let w1 = floor_boundary(&f.text, (w0 + MAX_LINE_BYTES).min(whole.end));
            let prefix = if w0 > whole.start { CUT.len() } else { 0 };
            if prefix > 0 {
                text.push_str(CUT);
            }
            text.push_str(&f.text[w0..w1]);
            if w1 < whole.end {
                text.push_str(CUT);
                text.push('\n');
            }
            (w0..w1, prefix)
        };
        let before = &f.text[whole.start..window.start];
        let col_base = if f.ascii {
            before.len()
        } else {
            before.chars().count()
        };
        lines.push(Line {
            range: at..text.len(),
            number: i + 1,
            index: Some(i),
            window,
            prefix,
            col_base,
        });
    }
    Part { file, text, lines }
}

impl<'a> Files<'a> for Excerpt<'_> {
    type FileId = FileId;
    type Name = &'a str;
    type Source = &'a str;

    fn name(&'a self, id: FileId) -> Result<&'a str, Error> {
        self.part(id).ok_or(Error::FileMissing)?;
        Ok(&self.map.file(id).name)
    }

    fn source(&'a self, id: FileId) -> Result<&'a str, Error> {
        self.part(id)
            .map(|p| p.text.as_str())
            .ok_or(Error::FileMissing)
    }

    fn line_index(&'a self, id: FileId, byte_index: usize) -> Result<usize, Error> {
        let lines = self.lines(id)?;
        Ok(lines
            .partition_point(|l| l.range.start <= byte_index)
            .saturating_sub(1))
    }

    fn line_number(&'a self, id: FileId, line_index: usize) -> Result<usize, Error> {
        let lines = self.lines(id)?;
        lines
            .get(line_index)
            .map(|l| l.number)
            .ok_or(Error::LineTooLarge {
                given: line_index,
                max: lines.len().saturating_sub(1),
            })
    }

    fn column_number(
        &'a self,
        id: FileId,
        line_index: usize,
        byte_index: usize,
    ) -> Result<usize, Error> {
        let p = self.part(id).ok_or(Error::FileMissing)?;
        let l = p.lines.get(line_index).ok_or(Error::LineTooLarge {
            given: line_index,
            max: p.lines.len().saturating_sub(1),
        })?;
        let from = l.range.start + l.prefix;
        let to = floor_boundary(&p.text, byte_index.clamp(from, l.range.end));
        Ok(l.col_base + p.text[from..to].chars().count() + 1)
    }

    fn line_range(&'a self, id: FileId, line_index: usize) -> Result<Range<usize>, Error> {
        let lines = self.lines(id)?;
        lines
            .get(line_index)
            .map(|l| l.range.clone())
            .ok_or(Error::LineTooLarge {
                given: line_index,
                max: lines.len().saturating_sub(1),
            })
    }
}
