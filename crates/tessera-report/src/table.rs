//! Tables: one value, four renderings (aligned text, CSV, Markdown, HTML).
//!
//! Cells come from outside (job, user, account, partition and node names), so
//! every rendering escapes what its syntax cannot hold, with the one function per
//! format of `tessera_core::quote`: control characters are shown as `\n`, `\x1b`
//! ([`quote::text`]) in all four, CSV cells are quoted per RFC 4180
//! ([`quote::csv`]), a Markdown cell's `|` is `\|`, and HTML is escaped. A cell
//! never adds a row or a column.

use std::fmt::Write as _;
use tessera_core::quote;

/// Rows of cells under a header; the first column is a label (left-aligned in
/// text), the others values (right-aligned).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Table {
    pub header: Vec<String>,
    pub rows: Vec<Vec<String>>,
}

/// How to render a [`Table`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TableFormat {
    Text,
    Csv,
    Markdown,
}

impl Table {
    pub fn new<S: ToString>(header: &[S]) -> Table {
        Table { header: header.iter().map(|h| h.to_string()).collect(), rows: Vec::new() }
    }

    pub fn row(&mut self, cells: Vec<String>) -> &mut Table {
        debug_assert_eq!(cells.len(), self.header.len(), "a row's cells match the header");
        self.rows.push(cells);
        self
    }

    pub fn render(&self, format: TableFormat) -> String {
        match format {
            TableFormat::Text => self.text(),
            TableFormat::Csv => self.csv(),
            TableFormat::Markdown => self.markdown(),
        }
    }

    /// Columns padded to their widest cell, two spaces apart, a rule under the
    /// header; cells as [`quote::text`] shows them.
    pub fn text(&self) -> String {
        let shown: Vec<Vec<std::borrow::Cow<'_, str>>> = std::iter::once(&self.header).chain(&self.rows).map(|r| r.iter().map(|c| quote::text(c)).collect()).collect();
        let n = self.header.len();
        let widths: Vec<usize> = (0..n).map(|i| shown.iter().map(|r| r[i].chars().count()).max().unwrap_or(0)).collect();
        let line = |cells: &[std::borrow::Cow<'_, str>]| {
            cells.iter().zip(&widths).enumerate().map(|(i, (c, &w))| if i == 0 { format!("{c:<w$}") } else { format!("{c:>w$}") }).collect::<Vec<_>>().join("  ")
        };
        let mut out = String::new();
        let _ = writeln!(out, "{}", line(&shown[0]));
        let _ = writeln!(out, "{}", widths.iter().map(|w| "-".repeat(*w)).collect::<Vec<_>>().join("  "));
        for r in &shown[1..] {
            let _ = writeln!(out, "{}", line(r));
        }
        out
    }

    /// RFC 4180 ([`quote::csv`]): cells with a comma or a quote are quoted, and
    /// control characters escaped (a cell never breaks its line).
    pub fn csv(&self) -> String {
        let mut out = String::new();
        for r in std::iter::once(&self.header).chain(&self.rows) {
            let _ = writeln!(out, "{}", r.iter().map(|c| quote::csv(c)).collect::<Vec<_>>().join(","));
        }
        out
    }

    pub fn markdown(&self) -> String {
        let cell = |c: &String| quote::text(c).replace('|', "\\|");
        let mut out = String::new();
        let _ = writeln!(out, "| {} |", self.header.iter().map(cell).collect::<Vec<_>>().join(" | "));
        let _ = writeln!(out, "|{}", "---|".repeat(self.header.len()));
        for r in &self.rows {
            let _ = writeln!(out, "| {} |", r.iter().map(cell).collect::<Vec<_>>().join(" | "));
        }
        out
    }

    /// An HTML `<table>` (cells escaped).
    pub fn html(&self) -> String {
        let mut out = String::from("<table><thead><tr>");
        for h in &self.header {
            let _ = write!(out, "<th>{}</th>", escape(h));
        }
        out.push_str("</tr></thead><tbody>");
        for r in &self.rows {
            out.push_str("<tr>");
            for c in r {
                let _ = write!(out, "<td>{}</td>", escape(c));
            }
            out.push_str("</tr>");
        }
        out.push_str("</tbody></table>");
        out
    }
}

/// Text for HTML (element content and quoted attributes), control characters
/// shown as [`quote::text`] shows them.
pub fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in quote::text(s).chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// Two decimals.
pub fn f2(x: f64) -> String {
    format!("{x:.2}")
}

/// A fraction as a percentage with one decimal, `-` when unknown.
pub fn pct(x: Option<f64>) -> String {
    x.map_or("-".into(), |v| format!("{:.1}%", 100.0 * v))
}
