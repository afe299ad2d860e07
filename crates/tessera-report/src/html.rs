//! Self-contained HTML pages: inline CSS, charts as inline SVG, no script, no
//! font, image or style loaded from anywhere (a Content-Security-Policy that
//! forbids every outside load says so to the browser as well).

use crate::chart::Chart;
use crate::table::{escape, Table};
use std::fmt::Write as _;

/// What a section holds, in order.
#[derive(Clone, Debug)]
pub enum Block {
    Chart(Chart),
    Table(Table),
    /// A paragraph of plain text.
    Text(String),
}

#[derive(Clone, Debug)]
pub struct Section {
    pub heading: String,
    pub blocks: Vec<Block>,
}

#[derive(Clone, Debug, Default)]
pub struct Page {
    pub title: String,
    /// Lines under the title (what was run, where, when).
    pub subtitle: Vec<String>,
    pub sections: Vec<Section>,
    /// Reload the page every this many seconds (a live dashboard).
    pub refresh_s: Option<u32>,
}

const STYLE: &str = "body{font-family:sans-serif;margin:24px;color:#222;max-width:1600px}\
h1{font-size:24px;margin-bottom:4px}h2{font-size:19px;border-bottom:1px solid #ccc;padding-bottom:4px;margin-top:28px}\
.sub{color:#555;margin:2px 0}.grid{display:flex;flex-wrap:wrap;gap:12px}\
figure.chart{margin:0;border:1px solid #ddd;background:#fff}\
table{border-collapse:collapse;margin:8px 0;font-size:13px}th,td{border:1px solid #ccc;padding:3px 8px;text-align:right}\
th{background:#f0f0f0}td:first-child,th:first-child{text-align:left}p{max-width:70em}";

impl Page {
    pub fn new(title: impl Into<String>) -> Page {
        Page { title: title.into(), ..Page::default() }
    }

    pub fn section(&mut self, heading: impl Into<String>, blocks: Vec<Block>) -> &mut Page {
        self.sections.push(Section { heading: heading.into(), blocks });
        self
    }

    /// Every chart of the page.
    pub fn charts(&self) -> impl Iterator<Item = &Chart> {
        self.sections.iter().flat_map(|s| s.blocks.iter()).filter_map(|b| match b {
            Block::Chart(c) => Some(c),
            _ => None,
        })
    }

    pub fn render(&self) -> String {
        let mut o = String::with_capacity(1 << 16);
        o.push_str("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">");
        o.push_str("<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'; img-src data:\">");
        if let Some(s) = self.refresh_s {
            let _ = write!(o, "<meta http-equiv=\"refresh\" content=\"{s}\">");
        }
        let _ = write!(o, "<title>{}</title><style>{STYLE}</style></head><body>\n<h1>{}</h1>\n", escape(&self.title), escape(&self.title));
        for l in &self.subtitle {
            let _ = writeln!(o, "<p class=\"sub\">{}</p>", escape(l));
        }
        for (i, s) in self.sections.iter().enumerate() {
            let _ = writeln!(o, "<section id=\"s{i}\"><h2>{}</h2><div class=\"grid\">", escape(&s.heading));
            for b in &s.blocks {
                match b {
                    Block::Chart(c) => {
                        let _ = writeln!(o, "<figure class=\"chart\" data-title=\"{}\">{}</figure>", escape(&c.title), c.svg());
                    }
                    Block::Table(t) => {
                        let _ = writeln!(o, "<div>{}</div>", t.html());
                    }
                    Block::Text(t) => {
                        let _ = writeln!(o, "<p>{}</p>", escape(t));
                    }
                }
            }
            o.push_str("</div></section>\n");
        }
        o.push_str("</body></html>\n");
        o
    }
}
