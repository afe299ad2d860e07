//! Sweep files made into typed runs.

use tessera_core::PolicyKind;
use tessera_studies::sweep;

fn file(text: &str) -> (tempfile::TempDir, std::path::PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("s.toml");
    std::fs::write(&p, text).unwrap();
    (dir, p)
}

/// Every case is a typed run: the cartesian product, the last parameter
/// fastest, `gamma` the arrival scale; its command line is what `--list` shows.
#[test]
fn cases_are_typed_runs_of_the_product() {
    let (_d, p) = file("traces = [\"default\"]\npolicies = [\"fcfs\", \"easy\"]\n[fixed]\nmax-jobs = 200\n[parameters]\ngamma = [1.0, 0.5]\nnodeset_tolerance = [0.5]\n");
    let s = sweep::load(&p).unwrap();
    assert_eq!(&s.header[..6], ["case", "trace", "cluster", "policy", "gamma", "nodeset_tolerance"]);
    assert_eq!(s.cases.len(), 4);
    let c = &s.cases[1];
    assert_eq!(c.identity, ["default", "", "fcfs", "0.5", "0.5"]);
    assert_eq!(c.command(), "--policy fcfs --max-jobs 200 --arrival-scale 0.5 --nodeset-tolerance 0.5");
    // a node-set option without a node set is refused, as `sim run` refuses it
    assert_eq!(c.spec().unwrap_err().to_string(), "--nodeset-tolerance needs --nodeset");
    let (_d, p) = file("traces = [\"default\"]\npolicies = [\"conservative\"]\n[fixed]\nmax-jobs = 200\n[parameters]\ngamma = [1.0, 0.5]\n");
    let s = sweep::load(&p).unwrap();
    let spec = s.cases[1].spec().unwrap();
    assert_eq!((spec.policy, spec.max_jobs, spec.arrival_scale, spec.trace), (PolicyKind::Conservative, Some(200), Some(0.5), None));
    let cases: Vec<&sweep::Case> = s.cases.iter().collect();
    let t = sweep::run(&p, s.header.clone(), &sweep::specs(&p, &cases).unwrap(), 2, "cases").unwrap();
    assert_eq!(t.rows.len(), 2);
    assert_eq!(&t.rows[1][..5], ["1", "default", "", "conservative", "0.5"]);
    assert_eq!(t.rows[1][5], "200", "jobs simulated");
}

/// A key that is no flag of a run names the case, the key and the flags known.
#[test]
fn an_unknown_parameter_names_the_case_and_the_flag() {
    let (_d, p) = file("traces = [\"default\"]\npolicies = [\"easy\"]\n[parameters]\nno_such_flag = [1]\n");
    let s = sweep::load(&p).unwrap();
    let e = format!("{:#}", sweep::specs(&p, &s.cases.iter().collect::<Vec<_>>()).err().unwrap());
    assert!(e.contains(": case 0: --no-such-flag: not a flag of `sim run`") && e.contains("--max-jobs"), "{e}");
    assert_eq!(sweep::shard("1/4").unwrap(), (1, 4));
    assert!(sweep::shard("4/4").is_err());
}
