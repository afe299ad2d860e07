//! Fair share, accounts and limits in simulated runs of shared traces
//! (Parallel Workloads Archive).

use std::io::Write;
use tessera_core::PolicyKind;
use tessera_studies::{execute, RunSpec};

fn spec(trace: &std::path::Path, priority: Option<&str>) -> RunSpec {
    RunSpec { trace: Some(trace.into()), max_jobs: Some(6000), priority: priority.map(str::to_string), ..RunSpec::new(PolicyKind::Easy) }
}

#[test]
fn a_fair_share_replay_of_a_shared_trace_reports_each_accounts_share() {
    let Some(trace) = tessera_workload::traces::shared_trace("SDSC-SP2-1998-4.2-cln.swf.gz") else { return };
    let fifo = execute(&spec(&trace, None)).unwrap();
    assert!(fifo.summary.fairness.is_none() && fifo.summary.priority.is_none(), "submission order has no accounts");
    let fair = execute(&spec(&trace, Some("multifactor"))).unwrap();
    let rows = fair.summary.fairness.as_ref().expect("shares reported");
    assert_eq!(rows[0].association, "root");
    assert_eq!(rows[0].jobs, fair.summary.jobs_simulated);
    assert!((rows[0].share_received - 1.0).abs() < 1e-12);
    let groups: Vec<_> = rows.iter().filter(|r| r.depth == 1).collect();
    assert!(groups.len() > 1);
    let received: f64 = groups.iter().map(|r| r.share_received).sum();
    assert!((received - 1.0).abs() < 1e-9, "the groups' shares add up: {received}");
    for g in &groups {
        assert!((g.share_given - 1.0 / groups.len() as f64).abs() < 1e-12, "equal shares without a file");
    }
    // the group served most beyond its share waits longer, against everyone's
    // mean, when its usage counts against it
    let top = groups.iter().max_by(|a, b| (a.share_received / a.share_given).total_cmp(&(b.share_received / b.share_given))).unwrap();
    let s = fair.w.sharing.as_ref().unwrap();
    let relative = |run: &tessera_studies::run::Executed| {
        let times = tessera_sim::metrics::job_times(&run.w, &run.outcome);
        let all = times.iter().map(|j| j.wait()).sum::<f64>() / times.len() as f64;
        let mine: Vec<f64> = times.iter().zip(&s.tickets).filter(|(_, t)| s.accounts.get(t.assoc).account == top.association).map(|(j, _)| j.wait()).collect();
        mine.iter().sum::<f64>() / mine.len() as f64 / all
    };
    let (r_fair, r_fifo) = (relative(&fair), relative(&fifo));
    assert!(r_fair > r_fifo, "{}: waits {r_fair}× the mean under fair share, {r_fifo}× in submission order", top.association);
    assert_ne!(fair.outcome.start, fifo.outcome.start);
    // the same run twice gives the same schedule
    assert_eq!(execute(&spec(&trace, Some("multifactor"))).unwrap().outcome.start, fair.outcome.start);
}

#[test]
fn an_accounts_file_limits_a_replay() {
    let Some(trace) = tessera_workload::traces::shared_trace("SDSC-SP2-1998-4.2-cln.swf.gz") else { return };
    let base = execute(&spec(&trace, Some("multifactor"))).unwrap();
    let s = base.w.sharing.as_ref().unwrap();
    // the trace's own groups and users, with limits: one running job per user
    // of the busiest group, and no job over 4 hours anywhere
    let mut text = String::from("[priority]\ntype = \"multifactor\"\n\n[[qos]]\nname = \"normal\"\nmax_wall = \"4:00:00\"\n\n");
    for a in s.accounts.assocs.iter().skip(1).filter(|a| a.user.is_none()) {
        text.push_str(&format!("[[account]]\nname = \"{}\"\n\n", a.account));
    }
    // the account with most jobs
    let mut count: std::collections::BTreeMap<String, usize> = Default::default();
    for t in &s.tickets {
        *count.entry(s.accounts.get(t.assoc).account.clone()).or_default() += 1;
    }
    let limited = count.iter().max_by_key(|(a, n)| (**n, std::cmp::Reverse((*a).clone()))).unwrap().0.clone();
    for a in s.accounts.assocs.iter().filter(|a| a.user.is_some()) {
        let user = a.user.as_deref().unwrap();
        text.push_str(&format!("[[user]]\nname = \"{user}\"\naccount = \"{}\"\n{}\n", a.account, if a.account == limited { "max_jobs = 1\n" } else { "" }));
    }
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("accounts.toml");
    std::fs::File::create(&path).unwrap().write_all(text.as_bytes()).unwrap();
    let run = execute(&RunSpec { accounts: Some(path), ..spec(&trace, None) }).unwrap();
    let long = base.w.jobs.iter().filter(|j| j.estimate > 4 * 3600).count() as u64;
    assert!(long > 0);
    assert_eq!(run.summary.jobs_skipped.get("over_limit").copied(), Some(long), "jobs asking more than MaxWall are refused");
    // no user of the limited account ever runs two jobs at once (without the
    // limit, some did)
    let most = |run: &tessera_studies::run::Executed| {
        let sh = run.w.sharing.as_ref().unwrap();
        let mut by_user: std::collections::BTreeMap<String, Vec<(i64, i64)>> = Default::default();
        for (i, t) in sh.tickets.iter().enumerate() {
            let a = sh.accounts.get(t.assoc);
            if a.account == limited {
                by_user.entry(a.label()).or_default().push((run.outcome.start[i], run.outcome.end[i]));
            }
        }
        let mut most = 0;
        for runs in by_user.values() {
            let mut ev: Vec<(i64, i32)> = runs.iter().flat_map(|&(s, e)| [(s, 1), (e, -1)]).collect();
            // an end before a start at the same instant
            ev.sort_by_key(|&(t, d)| (t, d));
            let mut n = 0;
            for (_, d) in ev {
                n += d;
                most = most.max(n);
            }
        }
        most
    };
    assert!(most(&base) > 1);
    assert_eq!(most(&run), 1, "the limit holds");
}

/// A replay of SDSC-SP2 (Parallel Workloads Archive) on its 128 nodes with a
/// weekly four-hour maintenance of 32 nodes and a daily window for a course:
/// under EASY and conservative no job holds a maintenance node during any
/// window, jobs still run on those nodes between windows, and every job runs.
#[test]
fn a_weekly_maintenance_keeps_its_nodes_empty_in_a_replay() {
    let Some(trace) = tessera_workload::traces::shared_trace("SDSC-SP2-1998-4.2-cln.swf.gz") else { return };
    let dir = tempfile::tempdir().unwrap();
    let resv = dir.path().join("resv.toml");
    std::fs::write(
        &resv,
        "[[reservation]]\nname = \"maint\"\nstart = \"2-06:00:00\"\nduration = \"4:00:00\"\nnodes = \"sp[001-032]\"\nflags = [\"maint\", \"weekly\"]\n\n[[reservation]]\nname = \"course\"\nstart = 36000\nduration = 120\nnodes = \"sp[100-103]\"\nflags = [\"daily\"]\nusers = [\"u1\"]\n",
    )
    .unwrap();
    let cluster = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/clusters/sdsc-sp2.toml");
    for policy in [PolicyKind::Easy, PolicyKind::Conservative] {
        let spec = RunSpec { cluster: Some(cluster.clone()), reservations: Some(resv.clone()), max_jobs: Some(3000), ..spec(&trace, None) };
        let spec = RunSpec { policy, ..spec };
        let run = execute(&spec).unwrap();
        assert_eq!(run.w.reservations.len(), 2);
        let (mut inside, mut between) = (0, 0);
        for (i, a) in run.outcome.alloc.iter().enumerate() {
            let parts: Vec<_> = a.expect("every job ran").collect();
            let (s, e) = (run.outcome.start[i], run.outcome.end[i]);
            for p in &parts {
                let week = 7 * 86_400;
                // the windows of the weeks the job spans
                for k in (s - 2 * 86_400 - 6 * 3600).div_euclid(week)..=(e - 2 * 86_400).div_euclid(week) + 1 {
                    let (ws, we) = (2 * 86_400 + 6 * 3600 + k * week, 2 * 86_400 + 10 * 3600 + k * week);
                    if p.node < 32 && s < we && ws < e && k >= 0 {
                        inside += 1;
                    }
                }
                if p.node < 32 {
                    between += 1;
                }
            }
        }
        assert_eq!(inside, 0, "{policy}: jobs on maintenance nodes inside a window");
        assert!(between > 100, "{policy}: the maintenance nodes run jobs between windows ({between})");
    }
    // a bad file names file, line and field
    std::fs::write(&resv, "[[reservation]]\nname = \"m\"\nstart = 0\nduration = 60\nnodes = \"sp[200-201]\"\nflags = [\"maint\"]\n").unwrap();
    let spec = RunSpec { cluster: Some(cluster), reservations: Some(resv.clone()), max_jobs: Some(10), ..spec(&trace, None) };
    let Err(e) = execute(&spec) else { panic!("a reservation on nodes the cluster lacks") };
    let e = e.to_string();
    assert!(e.contains("resv.toml:1: reservation[0]: Nodes=`sp200`: expected nodes of the cluster"), "{e}");
}
