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
