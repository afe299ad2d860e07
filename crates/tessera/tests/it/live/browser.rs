//! Browser tests: a run's report and a live cluster's dashboard rendered in
//! headless Chromium (Debian's `chromium`). Every chart drew (an SVG with its
//! title and marks), and the page made no outside request: Chromium is pointed
//! at a proxy of the test's own that counts every connection it receives
//! (loopback, where the dashboard lives, bypasses proxies; anything else
//! would reach it). Screenshots go to target/browser/.

use super::Live;
use crate::common::{tessera, text};
use crate::reports::{charts, RUN_CHARTS};
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Arc, Mutex};

fn chromium() -> Option<PathBuf> {
    let found = ["chromium", "chromium-browser"].iter().find_map(|c| {
        std::env::var_os("PATH").and_then(|p| std::env::split_paths(&p).map(|d| d.join(c)).find(|f| f.is_file()))
    });
    if found.is_none() {
        assert!(std::env::var_os("TESSERA_REQUIRE_BROWSER").is_none(), "TESSERA_REQUIRE_BROWSER is set but chromium is not installed (apt-get install chromium)");
        eprintln!("skipping the browser test: chromium is not installed (apt-get install chromium; .ci/run does)");
    }
    found
}

/// A proxy that records the first line of every request it receives.
fn trap() -> (u16, Arc<Mutex<Vec<String>>>) {
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = l.local_addr().unwrap().port();
    let seen = Arc::new(Mutex::new(Vec::new()));
    let h = seen.clone();
    std::thread::spawn(move || {
        for mut s in l.incoming().flatten() {
            let mut b = [0u8; 512];
            let n = s.read(&mut b).unwrap_or(0);
            h.lock().unwrap().push(String::from_utf8_lossy(&b[..n]).lines().next().unwrap_or("").to_string());
        }
    });
    (port, seen)
}

/// Requests a page made: all but Chromium's own services (time, updates,
/// accounts), which it contacts whatever the page, and connections that sent
/// nothing (a connection opened ahead, or one of the control page's closing
/// late on a busy machine, reads as an empty line: no request).
fn page_requests(seen: &Mutex<Vec<String>>) -> Vec<String> {
    let own = ["google.com", "googleapis.com", "gvt1.com", "gstatic.com"];
    seen.lock().unwrap().iter().filter(|r| !r.trim().is_empty()).filter(|r| {
        let target = r.split_whitespace().nth(1).unwrap_or("");
        let host = target.trim_start_matches("http://").trim_start_matches("https://").split(['/', ':']).next().unwrap_or("");
        !own.iter().any(|o| host == *o || host.ends_with(&format!(".{o}")))
    }).cloned().collect()
}

/// Load `url` in headless Chromium: (the DOM after load, screenshot written).
fn render(chrome: &Path, url: &str, screenshot: &Path, proxy: u16, height: u32) -> String {
    let profile = tempfile::tempdir().unwrap();
    let base = |extra: &[String]| {
        let mut c = Command::new(chrome);
        c.args(["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking", "--disable-component-update", "--disable-sync", "--hide-scrollbars"])
            .arg(format!("--user-data-dir={}", profile.path().display()))
            .arg(format!("--proxy-server=http://127.0.0.1:{proxy}"))
            .arg("--virtual-time-budget=3000")
            .args(extra)
            .arg(url);
        let out = c.output().expect("run chromium");
        assert!(out.status.success(), "chromium on {url}: {}", text(&out.stderr));
        out
    };
    let dom = text(&base(&["--dump-dom".into()]).stdout);
    base(&[format!("--screenshot={}", screenshot.display()), format!("--window-size=1600,{height}")]);
    assert!(std::fs::metadata(screenshot).map(|m| m.len() > 1_000).unwrap_or(false), "no screenshot of {url}");
    dom
}

/// Every chart drew: an SVG that carries its title and has marks.
fn check_charts(dom: &str, want: &[&str]) {
    let got = charts(dom);
    let titles: Vec<&str> = got.iter().map(|c| c.0.as_str()).collect();
    for w in want {
        assert!(titles.iter().any(|t| t.starts_with(w)), "chart {w} missing from {titles:?}");
    }
    for (title, svg) in &got {
        let title = title.replace("&amp;", "&");
        assert!(svg.contains(title.split(':').next().unwrap()), "{title}: the SVG has no title");
        assert!(svg.matches("<rect").count() + svg.matches("<polyline").count() + svg.matches("<path").count() > 3, "{title}: nothing drawn");
    }
}

fn shots() -> PathBuf {
    let d = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/browser");
    std::fs::create_dir_all(&d).unwrap();
    d
}

#[test]
fn a_report_and_the_live_dashboard_draw_every_chart_in_chromium_with_no_outside_request() {
    let Some(chrome) = chromium() else { return };
    let (proxy, seen) = trap();
    // the trap sees a page's outside request: a page that makes one
    let dir0 = tempfile::tempdir().unwrap();
    let control = dir0.path().join("control.html");
    std::fs::write(&control, "<html><body><img src=\"http://tessera-test.invalid/x.png\"></body></html>").unwrap();
    render(&chrome, &format!("file://{}", control.display()), &dir0.path().join("c.png"), proxy, 300);
    assert!(page_requests(&seen).iter().any(|r| r.contains("tessera-test.invalid")), "the trap missed the control page's request: {:?}", seen.lock().unwrap());
    seen.lock().unwrap().clear();
    // a power-aware run of a shared trace (every chart), else the default run
    let dir = tempfile::tempdir().unwrap();
    let report = dir.path().join("report.html");
    let cluster = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/clusters/theta-overprovisioned.toml");
    let (args, want): (Vec<String>, &[&str]) = match tessera_workload::traces::shared_trace("ALCF-Theta-2022-cqsimplus.swf.gz") {
        Some(t) => (["--trace", t.to_str().unwrap(), "--cluster", cluster.to_str().unwrap(), "--policy", "parm", "--max-jobs", "300"].map(String::from).to_vec(), RUN_CHARTS),
        None => (vec![], &RUN_CHARTS[..6]),
    };
    let mut a: Vec<&str> = vec!["sim", "run", "--report", report.to_str().unwrap()];
    a.extend(args.iter().map(String::as_str));
    let out = tessera(&a);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let dom = render(&chrome, &format!("file://{}", report.display()), &shots().join("report.png"), proxy, 4300);
    check_charts(&dom, want);

    // a running cluster with work: the dashboard at /
    let l = Live::start(2, 10);
    // jobs of half a node: two per node, so jobs running and nodes busy differ
    for _ in 0..68 {
        l.submit(&["-n", "4", "--wrap", "sleep 30"]);
    }
    l.wait_for("jobs running", 30, |l| l.jobs().iter().filter(|j| j.start.is_some()).count() >= 64);
    let dom = render(&chrome, &format!("http://127.0.0.1:{}/", l.port), &shots().join("dashboard.png"), proxy, 1300);
    check_charts(&dom, &["Queue by partition and reason", "Nodes by node type and state", "True overhead now", "Submissions and starts per second"]);
    assert!(dom.contains("64 jobs running, 4 queued"), "the dashboard shows the cluster's work");
    assert!(dom.contains("http-equiv=\"refresh\""), "it refreshes itself");
    assert_eq!(page_requests(&seen), Vec::<String>::new(), "a page made an outside request");
}
