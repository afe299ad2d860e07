//! Charts as SVG, drawn with plotters (<https://crates.io/crates/plotters>):
//! lines and steps over a linear or logarithmic x axis, and grouped bars. Every
//! chart has a title, axis labels with units and a legend.

use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

/// Width and height of a chart, in pixels.
pub const SIZE: (u32, u32) = (760, 380);

/// Colours of successive series (Okabe-Ito, readable by colour-blind readers).
const PALETTE: [RGBColor; 8] = [
    RGBColor(0, 114, 178),
    RGBColor(213, 94, 0),
    RGBColor(0, 158, 115),
    RGBColor(204, 121, 167),
    RGBColor(230, 159, 0),
    RGBColor(86, 180, 233),
    RGBColor(120, 120, 120),
    RGBColor(0, 0, 0),
];

pub fn colour(i: usize) -> RGBColor {
    PALETTE[i % PALETTE.len()]
}

/// One series of a line chart.
#[derive(Clone, Debug, PartialEq)]
pub struct Series {
    pub name: String,
    pub points: Vec<(f64, f64)>,
    /// Drawn as a step function (each value holds until the next point).
    pub step: bool,
    /// Dashed (a limit, such as a budget).
    pub dashed: bool,
}

impl Series {
    pub fn line(name: impl Into<String>, points: Vec<(f64, f64)>) -> Series {
        Series { name: name.into(), points, step: false, dashed: false }
    }
    pub fn step(name: impl Into<String>, points: Vec<(f64, f64)>) -> Series {
        Series { name: name.into(), points, step: true, dashed: false }
    }
    pub fn dashed(mut self) -> Series {
        self.dashed = true;
        self
    }
}

/// A chart: title, axis labels (with units) and what it draws.
#[derive(Clone, Debug, PartialEq)]
pub struct Chart {
    pub title: String,
    pub x_label: String,
    pub y_label: String,
    pub body: Body,
}

#[derive(Clone, Debug, PartialEq)]
pub enum Body {
    /// Lines; `log_x`: the x axis is logarithmic (values below its lowest
    /// positive value are drawn at it).
    Lines { series: Vec<Series>, log_x: bool },
    /// Grouped bars: one group per category, one bar per (name, values) series.
    Bars { categories: Vec<String>, series: Vec<(String, Vec<f64>)> },
    /// A heat map of cells in labelled groups (wrapped at [`HEAT_WIDTH`] per
    /// line): each cell is (class, level in [0, 1]); its colour is its class's,
    /// darker with its level. The legend names the classes.
    Heat { groups: Vec<(String, Vec<(usize, f64)>)>, classes: Vec<String> },
}

/// Cells per line of a heat map.
pub const HEAT_WIDTH: usize = 64;

/// Tick labels: plotters' default label font (12, which its SVG writes as
/// 12 / 1.24 ≈ 9.7 px), a generous mean advance of a sans-serif character (in
/// em), and the room a line of it takes across (px).
const LABEL_FONT: f64 = 12.0;
const LABEL_PX: f64 = LABEL_FONT / 1.24;
const CHAR_EM: f64 = 0.62;
const LABEL_LINE_PX: f64 = LABEL_PX * 1.3;
/// Margin, x and y label areas of a chart (px).
const MARGIN: u32 = 12;
const X_AREA: u32 = 44;
const Y_AREA: u32 = 70;
/// Longest category label drawn across (rotated), in characters.
const ROTATED_CHARS: usize = 22;

/// How a bar chart's category labels fit under their bars: level when each
/// fits its bar's width; otherwise turned to read upwards (the x label area
/// grows to hold the longest, cut at [`ROTATED_CHARS`]), and, should even one
/// line of text be wider than a bar, only every `every`-th labelled.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct BarLabels {
    pub rotated: bool,
    pub every: usize,
    /// Height of the x label area (px).
    pub area: u32,
}

impl BarLabels {
    pub fn fit(categories: &[String]) -> BarLabels {
        let slot = (SIZE.0 - 2 * MARGIN - Y_AREA) as f64 / categories.len().max(1) as f64;
        let longest = categories.iter().map(|c| c.chars().count()).max().unwrap_or(0);
        if text_px(longest) + 6.0 <= slot {
            return BarLabels { rotated: false, every: 1, area: X_AREA };
        }
        let every = (LABEL_LINE_PX / slot).ceil().max(1.0) as usize;
        let area = (text_px(longest.min(ROTATED_CHARS)) + 30.0).ceil() as u32;
        BarLabels { rotated: true, every, area: area.max(X_AREA) }
    }

    /// A category's label as drawn.
    pub fn text(&self, category: &str) -> String {
        if self.rotated && category.chars().count() > ROTATED_CHARS {
            let mut t: String = category.chars().take(ROTATED_CHARS - 1).collect();
            t.push('…');
            t
        } else {
            category.to_string()
        }
    }
}

/// Estimated width of `chars` characters of tick-label text (px).
fn text_px(chars: usize) -> f64 {
    chars as f64 * CHAR_EM * LABEL_PX
}

impl Chart {
    pub fn lines(title: &str, x_label: &str, y_label: &str, series: Vec<Series>) -> Chart {
        Chart { title: title.into(), x_label: x_label.into(), y_label: y_label.into(), body: Body::Lines { series, log_x: false } }
    }
    pub fn log_x(mut self) -> Chart {
        if let Body::Lines { log_x, .. } = &mut self.body {
            *log_x = true;
        }
        self
    }
    pub fn bars(title: &str, x_label: &str, y_label: &str, categories: Vec<String>, series: Vec<(String, Vec<f64>)>) -> Chart {
        Chart { title: title.into(), x_label: x_label.into(), y_label: y_label.into(), body: Body::Bars { categories, series } }
    }

    /// Whether there is anything to draw.
    pub fn is_empty(&self) -> bool {
        match &self.body {
            Body::Lines { series, .. } => series.iter().all(|s| s.points.is_empty()),
            Body::Bars { categories, series } => categories.is_empty() || series.is_empty(),
            Body::Heat { groups, .. } => groups.iter().all(|g| g.1.is_empty()),
        }
    }

    /// The chart as an SVG document.
    pub fn svg(&self) -> String {
        let mut out = String::new();
        {
            let root = SVGBackend::with_string(&mut out, SIZE).into_drawing_area();
            if let Err(e) = self.draw(&root) {
                // plotters fails only on an inconsistent range; say so in the chart
                let _ = root.fill(&WHITE);
                let _ = root.draw(&Text::new(format!("{}: cannot draw ({e})", self.title), (20, 20), ("sans-serif", 14)));
            }
            let _ = root.present();
        }
        out
    }

    fn draw(&self, root: &DrawingArea<SVGBackend<'_>, Shift>) -> Result<(), Box<dyn std::error::Error + '_>> {
        root.fill(&WHITE)?;
        if self.is_empty() {
            let mut c = ChartBuilder::on(root).caption(&self.title, ("sans-serif", 18)).margin(MARGIN).x_label_area_size(X_AREA).y_label_area_size(Y_AREA).build_cartesian_2d(0f64..1f64, 0f64..1f64)?;
            c.configure_mesh().x_desc(&self.x_label).y_desc(&self.y_label).disable_mesh().draw()?;
            c.draw_series(std::iter::once(Text::new("no data", (0.45, 0.5), ("sans-serif", 16))))?.label("no data").legend(|(x, y)| PathElement::new(vec![(x, y), (x + 18, y)], BLACK));
            c.configure_series_labels().border_style(BLACK).background_style(WHITE.mix(0.9)).draw()?;
            return Ok(());
        }
        match &self.body {
            Body::Lines { series, log_x } => {
                let pts = || series.iter().flat_map(|s| s.points.iter());
                let lowest_positive = pts().map(|p| p.0).filter(|&x| x > 0.0).fold(f64::INFINITY, f64::min);
                let floor = if lowest_positive.is_finite() { lowest_positive } else { 1.0 };
                let fx = |x: f64| if *log_x { x.max(floor) } else { x };
                let (mut x0, mut x1) = pts().fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), p| (a.min(fx(p.0)), b.max(fx(p.0))));
                let (mut y0, mut y1) = pts().fold((0f64, f64::NEG_INFINITY), |(a, b), p| (a.min(p.1), b.max(p.1)));
                if x1 <= x0 {
                    x1 = if *log_x { x0 * 10.0 } else { x0 + 1.0 };
                }
                if *log_x {
                    x0 = x0.max(f64::MIN_POSITIVE);
                }
                if y1 <= y0 {
                    y1 = y0 + 1.0;
                }
                y1 += (y1 - y0) * 0.08; // room for the legend
                y0 = y0.min(0.0);
                let shape = |s: &Series| -> Vec<(f64, f64)> {
                    let mut v = Vec::with_capacity(s.points.len() * 2);
                    for (i, &(x, y)) in s.points.iter().enumerate() {
                        if s.step && i > 0 {
                            v.push((fx(x), s.points[i - 1].1));
                        }
                        v.push((fx(x), y));
                    }
                    v
                };
                macro_rules! draw_lines {
                    ($c:expr) => {{
                        let mut c = $c;
                        c.configure_mesh().x_desc(&self.x_label).y_desc(&self.y_label).light_line_style(BLACK.mix(0.06)).draw()?;
                        for (k, s) in series.iter().enumerate() {
                            let col = colour(k);
                            let style = col.stroke_width(2);
                            let v = shape(s);
                            if s.dashed {
                                c.draw_series(DashedLineSeries::new(v, 8, 5, style))?
                            } else {
                                c.draw_series(LineSeries::new(v, style))?
                            }
                            .label(&s.name)
                            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 18, y)], col.stroke_width(2)));
                        }
                        c.configure_series_labels().position(SeriesLabelPosition::UpperRight).border_style(BLACK.mix(0.5)).background_style(WHITE.mix(0.9)).draw()?;
                    }};
                }
                let b = || {
                    let mut b = ChartBuilder::on(root);
                    b.caption(&self.title, ("sans-serif", 18)).margin(MARGIN).x_label_area_size(X_AREA).y_label_area_size(Y_AREA);
                    b
                };
                if *log_x {
                    draw_lines!(b().build_cartesian_2d((x0..x1).log_scale(), y0..y1)?);
                } else {
                    draw_lines!(b().build_cartesian_2d(x0..x1, y0..y1)?);
                }
            }
            Body::Heat { groups, classes } => {
                // lines of cells, each group starting a new line; y grows downwards
                let mut lines: Vec<(Option<&str>, &[(usize, f64)])> = Vec::new();
                for (name, cells) in groups {
                    for (k, chunk) in cells.chunks(HEAT_WIDTH).enumerate() {
                        lines.push(((k == 0).then_some(name.as_str()), chunk));
                    }
                }
                let rows = lines.len() as f64;
                let mut c = ChartBuilder::on(root)
                    .caption(&self.title, ("sans-serif", 18))
                    .margin(12)
                    .x_label_area_size(44)
                    .y_label_area_size(90)
                    .build_cartesian_2d(0f64..HEAT_WIDTH as f64 * 1.25, rows..0f64)?;
                let names: Vec<Option<&str>> = lines.iter().map(|l| l.0).collect();
                let ylabel = |v: &f64| {
                    let i = (v - 0.5).round();
                    if (v - 0.5 - i).abs() < 1e-6 && i >= 0.0 {
                        names.get(i as usize).copied().flatten().unwrap_or("").to_string()
                    } else {
                        String::new()
                    }
                };
                c.configure_mesh()
                    .x_desc(&self.x_label)
                    .y_desc(&self.y_label)
                    .disable_mesh()
                    .y_labels(lines.len().max(1) * 2 + 1)
                    .y_label_formatter(&ylabel)
                    .x_label_formatter(&|v| if *v <= HEAT_WIDTH as f64 { format!("{v}") } else { String::new() })
                    .draw()?;
                for (r, (_, cells)) in lines.iter().enumerate() {
                    c.draw_series(cells.iter().enumerate().map(|(x, &(class, level))| {
                        let base = colour(class);
                        let f = 0.35 + 0.65 * level.clamp(0.0, 1.0);
                        let col = RGBColor((255.0 - (255.0 - base.0 as f64) * f) as u8, (255.0 - (255.0 - base.1 as f64) * f) as u8, (255.0 - (255.0 - base.2 as f64) * f) as u8);
                        Rectangle::new([(x as f64 + 0.06, r as f64 + 0.08), (x as f64 + 0.94, r as f64 + 0.92)], col.filled())
                    }))?;
                }
                for (k, name) in classes.iter().enumerate() {
                    let col = colour(k);
                    c.draw_series(std::iter::empty::<Rectangle<(f64, f64)>>())?.label(name).legend(move |(x, y)| Rectangle::new([(x, y - 5), (x + 14, y + 5)], col.filled()));
                }
                c.configure_series_labels().position(SeriesLabelPosition::UpperRight).border_style(BLACK.mix(0.5)).background_style(WHITE.mix(0.9)).draw()?;
            }
            Body::Bars { categories, series } => {
                let n = categories.len();
                let top = series.iter().flat_map(|s| s.1.iter().copied()).filter(|v| v.is_finite()).fold(0f64, f64::max);
                let top = if top > 0.0 { top * 1.3 } else { 1.0 };
                let fit = BarLabels::fit(categories);
                let mut c = ChartBuilder::on(root)
                    .caption(&self.title, ("sans-serif", 18))
                    .margin(MARGIN)
                    .x_label_area_size(fit.area)
                    .y_label_area_size(Y_AREA)
                    .build_cartesian_2d(-0.5f64..(n as f64 - 0.5), 0f64..top)?;
                // turned labels are drawn below, by hand
                let label = |v: &f64| {
                    let i = v.round();
                    if !fit.rotated && (v - i).abs() < 1e-6 && i >= 0.0 && (i as usize) < n {
                        categories[i as usize].clone()
                    } else {
                        String::new()
                    }
                };
                c.configure_mesh().x_desc(&self.x_label).y_desc(&self.y_label).x_labels(n + 1).x_label_formatter(&label).disable_x_mesh().light_line_style(BLACK.mix(0.06)).draw()?;
                let k = series.len().max(1) as f64;
                let w = 0.8 / k;
                for (s, (name, values)) in series.iter().enumerate() {
                    let col = colour(s);
                    c.draw_series(values.iter().enumerate().filter(|(_, v)| v.is_finite()).map(|(i, &v)| {
                        let x = i as f64 - 0.4 + s as f64 * w;
                        Rectangle::new([(x, 0.0), (x + w * 0.92, v)], col.filled())
                    }))?
                    .label(name)
                    .legend(move |(x, y)| Rectangle::new([(x, y - 5), (x + 14, y + 5)], col.filled()));
                }
                c.configure_series_labels().position(SeriesLabelPosition::UpperRight).border_style(BLACK.mix(0.5)).background_style(WHITE.mix(0.9)).draw()?;
                if fit.rotated {
                    // reading upwards, each ending just under its bar's tick
                    let style = TextStyle::from(("sans-serif", LABEL_FONT).into_font()).transform(FontTransform::Rotate270).pos(Pos::new(HPos::Right, VPos::Center));
                    for (i, name) in categories.iter().enumerate().step_by(fit.every) {
                        let (x, y) = c.backend_coord(&(i as f64, 0.0));
                        root.draw(&Text::new(fit.text(name), (x, y + 8), style.clone()))?;
                    }
                }
            }
        }
        Ok(())
    }
}
