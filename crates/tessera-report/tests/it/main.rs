//! The report library: tables, series, charts and pages.

mod chart_labels;
mod escaping;
mod power_run;

use tessera_report::series::{busy_and_queue, by_size, cdf, size_class_name, spans, SPANS};
use tessera_report::{Block, Chart, Page, Series, Table, TableFormat};
use tessera_sim::metrics::JobTimes;

#[test]
fn a_table_renders_as_text_csv_markdown_and_html() {
    let mut t = Table::new(&["name", "value"]);
    t.row(vec!["a, \"b\"".into(), "1.00".into()]).row(vec!["<c>|d".into(), "22".into()]);
    assert_eq!(t.render(TableFormat::Csv), "name,value\n\"a, \"\"b\"\"\",1.00\n<c>|d,22\n");
    assert_eq!(t.render(TableFormat::Text), "name    value\n------  -----\na, \"b\"   1.00\n<c>|d      22\n");
    assert_eq!(t.render(TableFormat::Markdown), "| name | value |\n|---|---|\n| a, \"b\" | 1.00 |\n| <c>\\|d | 22 |\n");
    assert!(t.html().contains("<td>&lt;c&gt;|d</td>"));
}

#[test]
fn spans_are_time_weighted_means() {
    // rate 2 on [0, 120), 0 after, over [0, 240): the first half of the spans
    // at 2, the second at 0
    let s = spans(vec![(0.0, 2.0), (120.0, -2.0)], 0.0, 240.0);
    assert_eq!(s.len(), SPANS);
    assert!(s[..SPANS / 2].iter().all(|p| (p.1 - 2.0).abs() < 1e-9));
    assert!(s[SPANS / 2..].iter().all(|p| p.1.abs() < 1e-9));
    // a change inside a span is weighted by time: rate 1 from 0.25 of the first span
    let s = spans(vec![(0.25, 1.0)], 0.0, SPANS as f64);
    assert!((s[0].1 - 0.75).abs() < 1e-9, "{:?}", s[0]);
}

fn job(submit: f64, start: f64, end: f64, procs: f64) -> JobTimes {
    JobTimes { submit, start, end, suspended: 0.0, procs, held: procs * (end - start) }
}

#[test]
fn busy_processors_and_queue_follow_the_jobs() {
    // one job of 4 on [0, 100), one of 2 waiting [0, 100) then running [100, 200)
    let (busy, queue) = busy_and_queue(&[job(0.0, 0.0, 100.0, 4.0), job(0.0, 100.0, 200.0, 2.0)]);
    assert!((busy[0].1 - 4.0).abs() < 1e-9 && (busy[SPANS - 1].1 - 2.0).abs() < 1e-9);
    assert!((queue[0].1 - 1.0).abs() < 1e-9 && queue[SPANS - 1].1.abs() < 1e-9);
    let area: f64 = busy.iter().map(|p| p.1 * 200.0 / SPANS as f64).sum();
    assert!((area - 600.0).abs() < 1e-6, "processor-seconds are kept: {area}");
}

#[test]
fn cdf_and_size_classes() {
    let c = cdf((1..=1000).map(|i| i as f64).collect());
    assert!(c.len() <= 201 && c.last() == Some(&(1000.0, 1.0)));
    assert!(c.windows(2).all(|w| w[0].0 <= w[1].0 && w[0].1 < w[1].1));
    assert_eq!(cdf(vec![]), vec![]);
    let names: Vec<String> = (0..5).map(size_class_name).collect();
    assert_eq!(names, ["1", "2", "3-4", "5-8", "9-16"]);
    let s = by_size(&[job(0.0, 10.0, 20.0, 1.0), job(0.0, 30.0, 40.0, 3.0), job(0.0, 50.0, 60.0, 4.0)]);
    assert_eq!(s.iter().map(|r| (r.0.as_str(), r.1, r.2)).collect::<Vec<_>>(), [("1", 1, 10.0), ("3-4", 2, 40.0)]);
}

#[test]
fn a_chart_is_svg_with_its_title_axis_labels_and_legend() {
    let c = Chart::lines("Power drawn", "time (h)", "power (kW)", vec![Series::step("drawn", vec![(0.0, 1.0), (1.0, 3.0)]), Series::line("budget", vec![(0.0, 4.0), (1.0, 4.0)]).dashed()]);
    let svg = c.svg();
    assert!(svg.starts_with("<svg"));
    for text in ["Power drawn", "time (h)", "power (kW)", "drawn", "budget"] {
        assert!(svg.contains(text), "{text} is in the chart");
    }
    assert!(svg.matches("<polyline").count() + svg.matches("<path").count() >= 2, "the series are drawn");
    let b = Chart::bars("Usage", "account", "core-hours", vec!["a".into(), "b".into()], vec![("raw".into(), vec![1.0, 2.0])]);
    let svg = b.svg();
    assert!(svg.contains("Usage") && svg.contains("account") && svg.matches("<rect").count() >= 3);
    // nothing to draw still draws a titled, labelled chart that says so
    let e = Chart::lines("Empty", "x (s)", "y (s)", vec![Series::line("none", vec![])]).svg();
    assert!(e.contains("Empty") && e.contains("no data"));
    let log = Chart::lines("Waits", "wait (s)", "fraction", vec![Series::line("w", vec![(0.0, 0.1), (10.0, 0.5), (1e4, 1.0)])]).log_x().svg();
    assert!(log.contains("Waits") && !log.contains("cannot draw"));
}

#[test]
fn a_page_is_self_contained() {
    let mut p = Page::new("T <1>");
    p.section("S", vec![Block::Chart(Chart::bars("C", "x", "y", vec!["a".into()], vec![("v".into(), vec![1.0])])), Block::Text("a & b".into())]);
    let html = p.render();
    assert!(html.contains("<title>T &lt;1&gt;</title>") && html.contains("a &amp; b"));
    assert!(html.contains("Content-Security-Policy") && html.contains("default-src 'none'"));
    assert!(!html.contains("http://") || html.matches("http://").all(|_| html.contains("xmlns=\"http://www.w3.org/2000/svg\"")));
    assert!(!html.contains("<script") && !html.contains("src="), "nothing is loaded");
    assert_eq!(p.charts().count(), 1);
}
