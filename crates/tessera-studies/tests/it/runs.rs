//! One run from a `RunSpec`, and comparisons of several.

use tessera_core::PolicyKind;
use tessera_studies::{compare, execute, RunSpec};

fn small(policy: PolicyKind) -> RunSpec {
    RunSpec { max_jobs: Some(300), ..RunSpec::new(policy) }
}

/// The default spec is the embedded default workload on the embedded default
/// cluster; the same spec gives the same schedule every time.
#[test]
fn a_spec_runs_the_default_workload_deterministically() {
    let a = execute(&small(PolicyKind::Easy)).unwrap();
    assert!(a.label.starts_with("default (Lublin-Feitelson 2003 model, 10000 jobs, seed 1, 256 processors)"), "{}", a.label);
    assert_eq!((a.summary.jobs_simulated, a.w.capacity), (300, 256));
    let b = execute(&small(PolicyKind::Easy)).unwrap();
    assert_eq!((a.outcome.start, a.outcome.end), (b.outcome.start, b.outcome.end));
    // a pool of the same size is another machine
    let pool = execute(&RunSpec { capacity: Some(64), trace: None, ..small(PolicyKind::Fcfs) });
    assert!(pool.is_ok());
}

/// What the command line's parser would refuse is refused here too, naming the flag.
#[test]
fn a_spec_that_cannot_run_names_the_flag() {
    let e = |s: RunSpec| execute(&s).err().map(|e| e.to_string()).unwrap_or_default();
    assert_eq!(e(RunSpec { nodeset: Some("ONEOF:FEATURE".into()), ..small(PolicyKind::Easy) }), "--nodeset needs --cluster");
    assert!(e(RunSpec { partition: Some("gpu".into()), cluster: Some(concat!(env!("CARGO_MANIFEST_DIR"), "/../../examples/clusters/default.toml").into()), ..small(PolicyKind::Easy) }).starts_with("--partition gpu: no such partition"));
    let mut s = small(PolicyKind::Easy);
    s.power.cap = Some(30.0);
    assert!(e(s).starts_with("power flags need a cluster file with power_budget_w"));
    assert!(e(small(PolicyKind::Parm)).starts_with("policy parm needs a cluster file with power_budget_w"));
}

/// A comparison names its variants by policy (and cluster when there are
/// several) and runs each as its spec alone would.
#[test]
fn a_comparison_runs_every_variant_as_its_own_spec() {
    let base = small(PolicyKind::Easy);
    let v = compare::variants(&base, &["fcfs", "easy"], &[]).unwrap();
    assert_eq!(v.iter().map(|x| (x.0.as_str(), x.1.policy)).collect::<Vec<_>>(), [("fcfs", PolicyKind::Fcfs), ("easy", PolicyKind::Easy)]);
    let (label, variants) = compare::run(&v, 2).unwrap();
    assert!(label.starts_with("default"));
    let alone = execute(&small(PolicyKind::Fcfs)).unwrap();
    assert_eq!(variants[0].jobs, tessera_sim::metrics::job_times(&alone.w, &alone.outcome));
    let two = compare::variants(&base, &["easy"], &["a/x.toml".into(), "b/y.toml".into()]).unwrap();
    assert_eq!(two.iter().map(|x| x.0.as_str()).collect::<Vec<_>>(), ["easy on x", "easy on y"]);
    assert!(compare::variants(&base, &["sjf"], &[]).is_err());
    // submission order against fair share
    let orders = compare::variants_with(&base, &["easy"], &["fifo", "multifactor"], &[]).unwrap();
    assert_eq!(orders.iter().map(|x| (x.0.as_str(), x.1.priority.as_deref())).collect::<Vec<_>>(), [("easy fifo", Some("fifo")), ("easy multifactor", Some("multifactor"))]);
    assert!(compare::variants_with(&base, &["easy"], &["lottery"], &[]).is_err());
}
