//! The experiments' reports, from their typed settings.

use tessera_studies::testbed;

/// The testbed experiment runs the baseline and PARM's three variants on both
/// job mixes for every seed; noMM runs every job at its minimum size (the
/// experiment checks it), and the table has a row per mix.
#[test]
fn the_testbed_runs_every_scheme_on_both_mixes_for_every_seed() {
    let o = testbed::Options { seeds: 2, alpha: 1.0, parm_rule: "paper".into(), n_max_factor: 3.0, baseline_size: testbed::BaselineSize::Min, expand_boots: false, no_solve_time: true, threads: Some(2) };
    let rows: Vec<serde_json::Value> = serde_json::from_str(&testbed::run(&o, true).unwrap()).unwrap();
    assert_eq!(rows.len(), 2 * 2 * 4, "2 mixes × 2 seeds × (baseline + 3 variants)");
    assert!(rows.iter().all(|r| r["run"]["jobs"] == 10 && r["run"]["max_power_w"].as_f64().unwrap() <= r["run"]["budget_w"].as_f64().unwrap()));
    let text = testbed::run(&o, false).unwrap();
    assert!(text.contains("| SetL |") && text.contains("| SetH |"), "{text}");
    assert!(testbed::run(&testbed::Options { seeds: 1, ..o }, false).unwrap_err().to_string().contains("at least 2 seeds"));
}
