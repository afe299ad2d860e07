//! A bar chart's category labels never overlap: the true-overhead histogram of
//! a PARM run of Theta had 24 bars labelled `0-245`, `246-491`, … `5658-5880`,
//! written level under bars 28 px apart, each label about 50 px wide.

use tessera_report::chart::BarLabels;
use tessera_report::Chart;

/// (x, y, transform, text) of every `<text>` of an SVG.
fn texts(svg: &str) -> Vec<(f64, f64, Option<String>, String)> {
    svg.split("<text").skip(1)
        .map(|t| {
            let head = &t[..t.find('>').unwrap()];
            let attr = |name: &str| head.split(&format!(" {name}=\"")).nth(1).map(|v| v[..v.find('"').unwrap()].to_string());
            let text = t[t.find('>').unwrap() + 1..t.find("</text>").unwrap()].trim().to_string();
            (attr("x").unwrap().parse().unwrap(), attr("y").unwrap().parse().unwrap(), attr("transform"), text)
        })
        .collect()
}

/// Width of a tick label of `chars` characters at the labels' font (9.7 px):
/// 0.62 em a character is more than any digit, hyphen or lower-case letter of
/// a sans-serif font takes.
fn width(chars: usize) -> f64 {
    chars as f64 * 0.62 * 12.0 / 1.24
}

fn histogram_bins() -> Vec<String> {
    (0..24).map(|i| format!("{}-{}", i * 246, ((i + 1) * 246 - 1).min(5880))).collect()
}

#[test]
fn long_category_labels_are_turned_and_do_not_overlap() {
    let cats = histogram_bins();
    let svg = Chart::bars("True overhead histogram", "nodes idle (the whole machine)", "hours at that level", cats.clone(), vec![("hours".into(), (0..24).map(|i| 1.0 + i as f64).collect())]).svg();
    let all = texts(&svg);
    let labels: Vec<_> = all.iter().filter(|t| cats.contains(&t.3)).collect();
    assert_eq!(labels.len(), 24, "every bar is labelled: {all:?}");
    let turned = |l: &(f64, f64, Option<String>, String)| l.2.as_deref().is_some_and(|t| t.starts_with("rotate(270"));
    for w in labels.windows(2) {
        // level, a label takes its width across; turned a quarter, one line of text
        let room = if turned(w[0]) && turned(w[1]) { 12.0 } else { (width(w[0].3.len()) + width(w[1].3.len())) / 2.0 };
        assert!(w[1].0 - w[0].0 >= room, "{:?} and {:?} overlap", w[0], w[1]);
    }
    assert!(labels.iter().all(|l| turned(l)), "{labels:?}");
    // each ends under the axis and above the axis label
    let desc = all.iter().find(|t| t.3 == "nodes idle (the whole machine)").unwrap();
    for l in &labels {
        assert!(l.1 + width(l.3.len()) < desc.1 - 8.0, "{l:?} runs into the axis label at y = {}", desc.1);
    }
}

#[test]
fn short_labels_stay_level_and_a_hundred_bars_are_thinned() {
    let cats: Vec<String> = ["group1", "group2", "unknown"].iter().map(|s| s.to_string()).collect();
    let svg = Chart::bars("Usage by account", "account", "core-hours", cats.clone(), vec![("raw".into(), vec![1.0, 2.0, 3.0])]).svg();
    let labels: Vec<_> = texts(&svg).into_iter().filter(|t| cats.contains(&t.3)).collect();
    assert_eq!(labels.len(), 3);
    assert!(labels.iter().all(|l| l.2.is_none()), "{labels:?}");
    for w in labels.windows(2) {
        assert!(w[1].0 - w[0].0 >= (width(w[0].3.len()) + width(w[1].3.len())) / 2.0, "{w:?} overlap");
    }
    // more bars than lines of text fit across: every k-th is labelled, none overlap
    let many: Vec<String> = (0..100).map(|i| format!("{}-{}", i * 60, i * 60 + 59)).collect();
    let fit = BarLabels::fit(&many);
    assert!(fit.rotated && fit.every > 1, "{fit:?}");
    let svg = Chart::bars("H", "x", "y", many.clone(), vec![("v".into(), vec![1.0; 100])]).svg();
    let labels: Vec<_> = texts(&svg).into_iter().filter(|t| many.contains(&t.3)).collect();
    assert_eq!(labels.len(), 100usize.div_ceil(fit.every));
    assert!(labels.windows(2).all(|w| w[1].0 - w[0].0 >= 12.0), "{labels:?}");
    // a label longer than the area holds is cut, and says so
    assert_eq!(BarLabels::fit(&vec!["a very long account name that goes on".to_string(); 30]).text("a very long account name that goes on"), "a very long account n…");
}
