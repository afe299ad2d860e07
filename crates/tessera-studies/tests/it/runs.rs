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

/// A trace read as it streams, on a pool or a cluster, is simulated as it is
/// read (the summary says overlapped) and schedules as the same records read
/// whole; one out of queue order is sorted once read, and schedules as its
/// sorted copy; a pool sized by the header's comments before the first job
/// is too, unless a later comment sizes it otherwise; a malformed line past
/// `--max-jobs` still fails the run, naming its line.
#[test]
fn a_trace_simulated_as_it_is_read_schedules_as_one_read_whole() {
    use tessera_sim::{prepare_on, simulate, Machine};
    use tessera_workload::swf::SwfReader;
    let dir = tempfile::tempdir().unwrap();
    // 3,000 jobs (the reader hands them over in several handfuls)
    let lines: Vec<String> = (0..3000)
        .map(|i| {
            let (submit, run, procs) = (i * 7 + (i % 5), 10 + (i * 37) % 300, 1 + (i * 13) % 16);
            format!("{} {submit} -1 {run} {procs} -1 -1 {procs} {} -1 1 1 1 1 1 1 -1 -1", i + 1, run + (i % 3) * 50)
        })
        .collect();
    let write = |name: &str, lines: &[String]| {
        let p = dir.path().join(name);
        std::fs::write(&p, format!("; MaxProcs: 32\n{}\n", lines.join("\n"))).unwrap();
        p
    };
    let sorted = write("sorted.swf", &lines);
    let mut shuffled = lines.clone();
    shuffled.swap(100, 2500);
    let unsorted = write("unsorted.swf", &shuffled);
    let nodes = concat!(env!("CARGO_MANIFEST_DIR"), "/../../examples/clusters/default.toml");
    for (policy, cluster) in [(PolicyKind::Easy, None), (PolicyKind::Conservative, None), (PolicyKind::Easy, Some(nodes))] {
        let spec = |trace: &std::path::Path| RunSpec { trace: Some(trace.into()), capacity: cluster.is_none().then_some(32), cluster: cluster.map(Into::into), ..RunSpec::new(policy) };
        let fed = execute(&spec(&sorted)).unwrap();
        assert!(fed.summary.overlapped, "{policy}");
        let (_, records, _) = SwfReader::read_file(&sorted, false).unwrap();
        let machine = match cluster {
            None => Machine::Pool(32),
            Some(_) => fed.w.machine.clone(),
        };
        let whole = prepare_on(&records, machine);
        assert_eq!((&fed.w.jobs, &fed.w.record_index), (&whole.jobs, &whole.record_index), "{policy}");
        assert_eq!(fed.outcome, simulate(&whole, policy), "{policy}");
        let late = execute(&spec(&unsorted)).unwrap();
        assert!(!late.summary.overlapped, "{policy}: out of order, simulated whole");
        assert_eq!(late.w.jobs, fed.w.jobs);
        assert_eq!((&late.outcome.start, &late.outcome.end), (&fed.outcome.start, &fed.outcome.end));
        assert_eq!(late.w.record_index[..3], [0, 1, 2]);
        assert_eq!((late.w.record_index[100], late.w.record_index[2500]), (2500, 100));
    }
    // a pool sized by the header streams too; a size that a comment after the
    // first job changes reads the trace whole, with the size of the whole header
    let sized = execute(&RunSpec { trace: Some(sorted.clone()), ..RunSpec::new(PolicyKind::Easy) }).unwrap();
    let given = execute(&RunSpec { trace: Some(sorted.clone()), capacity: Some(32), ..RunSpec::new(PolicyKind::Easy) }).unwrap();
    assert!(sized.summary.overlapped);
    assert_eq!((sized.w.capacity, &sized.outcome), (32, &given.outcome));
    let late = dir.path().join("late.swf");
    std::fs::write(&late, format!("; MaxNodes: 32\n{}\n; MaxProcs: 24\n", lines.join("\n"))).unwrap();
    let resized = execute(&RunSpec { trace: Some(late.clone()), ..RunSpec::new(PolicyKind::Easy) }).unwrap();
    let at24 = execute(&RunSpec { trace: Some(late), capacity: Some(24), ..RunSpec::new(PolicyKind::Easy) }).unwrap();
    assert!(!resized.summary.overlapped);
    assert_eq!((resized.w.capacity, &resized.outcome), (24, &at24.outcome));
    let mut bad = lines;
    bad[2900] = "2901 20300 -1 x 1 -1 -1 1 10 -1 1 1 1 1 1 1 -1 -1".into();
    let bad = write("bad.swf", &bad);
    let e = execute(&RunSpec { trace: Some(bad.clone()), capacity: Some(32), max_jobs: Some(100), ..RunSpec::new(PolicyKind::Easy) }).err().expect("a malformed line fails the run");
    assert!(format!("{e:#}").contains("bad.swf:2902: field 4 (run time)"), "{e:#}");
}
