//! Advance reservations in the engine: a maintenance window keeps its nodes
//! empty for its whole length (once or every day), under every policy and on
//! random clusters; a job inside a reservation runs only on its nodes and
//! within its window; making, refusing and deleting reservations.

use crate::shortcuts::arb_case;
use proptest::prelude::*;
use std::collections::BTreeMap;
use tessera_core::{
    Cluster, Effect, Engine, Input, JobId, JobSpec, Outcome, PendingReason, PolicyKind, Rejection, Repeat, ReservationSpec, ResvError, ResvNodes, Time,
};

/// What each job got: its start, the end of its limit and its nodes.
#[derive(Debug, Clone, PartialEq)]
struct Ran {
    start: Time,
    until: Time,
    nodes: Vec<u32>,
}

struct Rec<'a> {
    jobs: &'a [(Time, JobSpec, Time)],
    index: BTreeMap<u64, usize>,
    ends: BTreeMap<Time, Vec<u64>>,
    ran: BTreeMap<u64, Ran>,
    wakes: std::collections::BTreeSet<Time>,
    rejected: Vec<String>,
}

impl tessera_core::Driver for Rec<'_> {
    fn effect(&mut self, engine: &Engine, now: Time, x: Effect) {
        engine.sanity_check();
        match x {
            Effect::Start { job, alloc, limit } => {
                let run = self.jobs[self.index[&job.0]].2;
                self.ends.entry(now + tessera_core::scaled(run, alloc.factor)).or_default().push(job.0);
                let nodes = alloc.parts.iter().map(|p| p.node).collect();
                self.ran.insert(job.0, Ran { start: now, until: now + limit.unwrap().max(1), nodes });
            }
            Effect::WakeAt(w) => {
                if w > now {
                    self.wakes.insert(w);
                }
            }
            Effect::Rejected { reason, .. } => self.rejected.push(reason.to_string()),
            Effect::Finished(_) => {}
            other => panic!("unexpected {other:?}"),
        }
    }

    fn due(&mut self, now: Time, inputs: &mut Vec<Input>) {
        for id in self.ends.remove(&now).unwrap_or_default() {
            inputs.push(Input::Complete { job: JobId(id), outcome: Outcome::Exited(0) });
        }
    }
}

/// Replay `jobs` with the reservations made at instant 0; returns what
/// every job got (every job must start) and the rejections.
fn replay(mut e: Engine, resv: &[ReservationSpec], jobs: &[(Time, JobSpec, Time)]) -> (BTreeMap<u64, Ran>, Vec<String>) {
    let mut arrivals: BTreeMap<Time, Vec<usize>> = BTreeMap::new();
    for (i, j) in jobs.iter().enumerate() {
        arrivals.entry(j.0).or_default().push(i);
    }
    let mut r = Rec {
        jobs,
        index: jobs.iter().enumerate().map(|(i, j)| (j.1.id.0, i)).collect(),
        ends: BTreeMap::new(),
        ran: BTreeMap::new(),
        wakes: [0].into_iter().collect(),
        rejected: Vec::new(),
    };
    loop {
        let next = [arrivals.keys().next(), r.ends.keys().next(), r.wakes.iter().next()];
        let Some(now) = next.into_iter().flatten().copied().min() else { break };
        r.wakes.remove(&now);
        let mut inputs = Vec::new();
        for id in r.ends.remove(&now).unwrap_or_default() {
            inputs.push(Input::Complete { job: JobId(id), outcome: Outcome::Exited(0) });
        }
        if now == 0 {
            inputs.extend(resv.iter().map(|s| Input::Reserve(Box::new(s.clone()))));
        }
        for i in arrivals.remove(&now).unwrap_or_default() {
            inputs.push(Input::submit(jobs[i].1));
        }
        tessera_core::step(&mut e, now, inputs, true, &mut r);
        e.sanity_check();
        assert!(now < 10_000_000, "the replay runs away");
    }
    assert_eq!(r.ran.len(), jobs.len(), "every job starts");
    (r.ran, r.rejected)
}

fn maint(name: &str, nodes: Vec<u32>, start: Time, end: Time, repeat: Repeat) -> ReservationSpec {
    ReservationSpec { name: name.into(), start, end, nodes: ResvNodes::List(nodes), maint: true, ignore_jobs: false, repeat, users: vec![], accounts: vec![] }
}

/// No job holds a reserved node at any instant of a window (from 0 to `horizon`).
fn assert_kept_empty(ran: &BTreeMap<u64, Ran>, r: &ReservationSpec, horizon: Time) -> Result<(), TestCaseError> {
    let ResvNodes::List(nodes) = &r.nodes else { unreachable!() };
    let period = r.repeat.period();
    let mut k = 0;
    loop {
        let shift = period.map_or(0, |p| k * p);
        let (s, e) = (r.start + shift, r.end + shift);
        if s > horizon || (period.is_none() && k > 0) {
            break;
        }
        for (id, x) in ran {
            let overlap = x.start < e && s < x.until;
            prop_assert!(!(overlap && x.nodes.iter().any(|n| nodes.contains(n))), "job {id} {x:?} runs in window [{s}, {e}) of {nodes:?}");
        }
        k += 1;
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 600, .. ProptestConfig::default() })]

    /// Random clusters (speeds, memory, node sets, exclusive partitions) and
    /// random maintenance windows, once or daily: under FCFS, EASY and
    /// conservative, no job's limit reaches into a window on its nodes, every
    /// job starts, and the engine with every shortcut schedules as the one
    /// without.
    #[test]
    fn a_maintenance_window_keeps_its_nodes_empty((toml, jobs) in arb_case(), first in 0u32..8, count in 1u32..4, start in 0i64..80, len in 1i64..60, daily in any::<bool>()) {
        let c = Cluster::from_toml(&toml, "resv.toml").unwrap();
        let n = c.nodes.len() as u32;
        let nodes: Vec<u32> = (first % n..(first % n + count).min(n)).collect();
        // a day of 100 s is too short for the engine's periods: a daily
        // window starts late enough that the jobs see two of them
        let (start, repeat) = if daily { (start + 86_400 - 200, Repeat::Daily) } else { (start, Repeat::Once) };
        let r = maint("m", nodes, start, start + len, repeat);
        // daily windows: jobs arrive around the first two
        let jobs: Vec<_> = if daily {
            jobs.into_iter().map(|(s, j, run)| (s * 40 + 86_400 - 300, j, run)).collect()
        } else {
            jobs
        };
        for policy in [PolicyKind::Fcfs, PolicyKind::Easy, PolicyKind::Conservative] {
            let (ran, rejected) = replay(Engine::with_cluster(policy, &c).unwrap(), std::slice::from_ref(&r), &jobs);
            prop_assert!(rejected.is_empty(), "{rejected:?}");
            assert_kept_empty(&ran, &r, 3 * 86_400)?;
            let (every, _) = replay(Engine::with_cluster(policy, &c).unwrap().without_shortcuts(), std::slice::from_ref(&r), &jobs);
            prop_assert_eq!(&ran, &every, "{} with and without shortcuts", policy);
        }
    }

    /// A reservation after the last job could end changes no schedule, on
    /// clusters placed node by node. EASY and conservative count cores without
    /// reservations where cores are interchangeable (one pace, no node sets,
    /// shared nodes) while no live job's memory can bind, and place node by
    /// node with them, which may differ: they are compared where the cluster
    /// is never counted (node sets, whole nodes, speeds) or where every job's
    /// memory binds (a pass that backfills has a live job); FCFS, which never
    /// backfills, also where only some jobs' memory binds.
    #[test]
    fn a_reservation_nobody_meets_changes_nothing((toml, jobs) in arb_case()) {
        let c = Cluster::from_toml(&toml, "resv.toml").unwrap();
        let per_core = c.nodes.iter().filter(|n| n.memory_mb > 0).map(|n| n.memory_mb / n.cores as u64).min();
        let binds = |j: &(Time, JobSpec, Time)| per_core.is_some_and(|r| j.1.mem_per_proc_mb > r);
        let counted = !toml.contains("[nodeset]") && !toml.contains("exclusive") && !(toml.contains("= 15") && toml.contains("= 10"));
        prop_assume!(!counted || jobs.iter().any(binds));
        let policies: &[PolicyKind] = if !counted || jobs.iter().all(binds) {
            &[PolicyKind::Fcfs, PolicyKind::Easy, PolicyKind::Conservative]
        } else {
            &[PolicyKind::Fcfs]
        };
        let all: Vec<u32> = (0..c.nodes.len() as u32).collect();
        // (a job across node sets waits out the delay of 20 s first)
        let late = jobs.iter().map(|j| j.0 + 1 + 20).max().unwrap_or(0) + jobs.iter().map(|j| j.1.estimate * 2 + 2).sum::<Time>();
        for &policy in policies {
            // (where cores are interchangeable, the engine without windows
            // may pick other nodes, at the same instants)
            let starts = |ran: BTreeMap<u64, Ran>| ran.into_iter().map(|(id, r)| (id, r.start)).collect::<Vec<_>>();
            let (plain, _) = replay(Engine::with_cluster(policy, &c).unwrap(), &[], &jobs);
            let (with, _) = replay(Engine::with_cluster(policy, &c).unwrap(), &[maint("late", all.clone(), late, late + 10, Repeat::Once)], &jobs);
            prop_assert_eq!(starts(plain), starts(with), "{}", policy);
        }
    }
}

fn four_nodes() -> Cluster {
    Cluster::from_toml(
        "[[nodetype]]\nname = \"a\"\ncount = 2\ncores = 4\nhs06_per_core = 10.0\nfeatures = [\"old\"]\n\n[[nodetype]]\nname = \"b\"\ncount = 2\ncores = 4\nhs06_per_core = 10.0\nfeatures = [\"new\"]\n\n[[partition]]\nname = \"p\"\nnodetypes = [\"a\", \"b\"]\n",
        "four.toml",
    )
    .unwrap()
}

#[test]
fn a_job_starts_before_a_window_only_if_it_ends_by_then() {
    let c = four_nodes();
    for policy in [PolicyKind::Fcfs, PolicyKind::Easy, PolicyKind::Conservative] {
        // every node is in maintenance over [100, 200): a job of 100 s at 0
        // runs, one of 101 s waits for the window's end
        let r = maint("all", vec![0, 1, 2, 3], 100, 200, Repeat::Once);
        let jobs = [(0, JobSpec::new(JobId(1), 4, 100), 100), (0, JobSpec::new(JobId(2), 4, 101), 50), (150, JobSpec::new(JobId(3), 1, 10), 10)];
        let (ran, _) = replay(Engine::with_cluster(policy, &c).unwrap(), &[r], &jobs);
        assert_eq!((ran[&1].start, ran[&2].start, ran[&3].start), (0, 200, 200), "{policy}");
    }
}

#[test]
fn pending_jobs_name_the_maintenance_and_their_reservation() {
    let c = four_nodes();
    let mut e = Engine::with_cluster(PolicyKind::Easy, &c).unwrap();
    let mut out = Vec::new();
    e.handle(0, Input::Reserve(Box::new(maint("m", vec![0, 1, 2, 3], 100, 200, Repeat::Daily))), &mut out);
    let course = ReservationSpec {
        name: "course".into(),
        start: 300,
        end: 400,
        nodes: ResvNodes::Count { count: 1, features: vec!["new".into()], partition: None },
        maint: false,
        ignore_jobs: false,
        repeat: Repeat::Once,
        users: vec!["alice".into()],
        accounts: vec![],
    };
    e.handle(0, Input::Reserve(Box::new(course)), &mut out);
    assert!(out.iter().all(|x| !matches!(x, Effect::Rejected { .. })), "{out:?}");
    let r = e.reservation("course").unwrap();
    assert_eq!(r.nodes, vec![2], "the first node with the feature");
    assert!(r.admits("alice", None) && !r.admits("bob", Some("physics")));
    let id = r.id;
    // job 1 does not fit before the window; job 2 waits for its reservation
    e.handle(10, Input::submit(JobSpec::new(JobId(1), 2, 91)), &mut out);
    e.handle(10, Input::submit(JobSpec { reservation: Some(id), ..JobSpec::new(JobId(2), 4, 100) }), &mut out);
    e.handle(10, Input::Pass, &mut out);
    assert!(!out.iter().any(|x| matches!(x, Effect::Start { .. })), "{out:?}");
    assert_eq!(e.pending_reason(10, JobId(1)), Some(PendingReason::Maintenance));
    assert_eq!(e.pending_reason(10, JobId(2)), Some(PendingReason::Reservation { start: 300 }));
    // a job longer than the reservation's window is refused
    out.clear();
    e.handle(10, Input::submit(JobSpec { reservation: Some(id), ..JobSpec::new(JobId(3), 1, 101) }), &mut out);
    assert!(matches!(&out[..], [Effect::Rejected { reason: Rejection::NeverFits { .. }, .. }]), "{out:?}");
    // at the window, job 2 starts on the reserved node; job 1 started at 200
    out.clear();
    e.handle(200, Input::Pass, &mut out);
    e.handle(290, Input::Complete { job: JobId(1), outcome: Outcome::Exited(0) }, &mut out);
    e.handle(300, Input::Pass, &mut out);
    let starts: Vec<_> = out.iter().filter_map(|x| if let Effect::Start { job, alloc, .. } = x { Some((job.0, alloc.parts.iter().map(|p| p.node).collect::<Vec<_>>())) } else { None }).collect();
    assert_eq!(starts.len(), 2, "{out:?}");
    assert_eq!(starts[1], (2, vec![2]), "the reserved node, in its window");
}

#[test]
fn busy_nodes_overlaps_and_deletions() {
    let c = four_nodes();
    let mut e = Engine::with_cluster(PolicyKind::Easy, &c).unwrap();
    let mut out = Vec::new();
    e.handle(0, Input::submit(JobSpec::new(JobId(1), 4, 1000)), &mut out);
    e.handle(0, Input::Pass, &mut out);
    out.clear();
    // node 0 holds job 1 until 1000
    let mut r = ReservationSpec { maint: false, users: vec!["alice".into()], ..maint("x", vec![0, 1], 500, 600, Repeat::Once) };
    e.handle(0, Input::Reserve(Box::new(r.clone())), &mut out);
    assert!(matches!(&out[..], [Effect::Rejected { reason: Rejection::Reservation { why: ResvError::Busy { node: 0, until: 1000 }, .. }, .. }]), "{out:?}");
    out.clear();
    r.ignore_jobs = true;
    e.handle(0, Input::Reserve(Box::new(r.clone())), &mut out);
    assert!(!out.iter().any(|x| matches!(x, Effect::Rejected { .. })), "{out:?}");
    // a second non-maintenance reservation over the same nodes and window
    e.handle(0, Input::Reserve(Box::new(ReservationSpec { name: "y".into(), nodes: ResvNodes::List(vec![1]), ..r.clone() })), &mut out);
    assert!(matches!(&out[..], [Effect::Rejected { reason: Rejection::Reservation { why: ResvError::Overlap { node: 1, .. }, .. }, .. }]), "{out:?}");
    out.clear();
    // a maintenance one may overlap
    e.handle(0, Input::Reserve(Box::new(maint("m", vec![1], 550, 560, Repeat::Once))), &mut out);
    assert!(!out.iter().any(|x| matches!(x, Effect::Rejected { .. })), "{out:?}");
    // a job waiting in x is held when x is deleted
    let id = e.reservation("x").unwrap().id;
    e.handle(1, Input::submit(JobSpec { reservation: Some(id), ..JobSpec::new(JobId(2), 1, 10) }), &mut out);
    e.handle(2, Input::Unreserve("x".into()), &mut out);
    e.handle(2, Input::Pass, &mut out);
    assert!(!out.iter().any(|x| matches!(x, Effect::Start { .. } | Effect::Rejected { .. })), "{out:?}");
    assert_eq!(e.pending_reason(2, JobId(2)), Some(PendingReason::Held));
    e.handle(3, Input::Unreserve("x".into()), &mut out);
    assert!(matches!(out.last(), Some(Effect::Rejected { reason: Rejection::Reservation { why: ResvError::Unknown(_), .. }, .. })));
    // a one-off reservation leaves once its window has ended
    e.handle(600, Input::Pass, &mut out);
    assert!(e.reservation("m").is_none());
}

#[test]
fn requests_read_as_scontrol_writes_them_and_name_what_is_wrong() {
    use tessera_core::ResvRequest;
    let c = four_nodes();
    let r = ResvRequest::from_words(&["ReservationName=maint", "StartTime=now+2hours", "Duration=1-00:00:00", "Nodes=n[1-2]", "Flags=MAINT,WEEKLY"]);
    // the cluster's nodes are named by their types
    let names: Vec<&str> = c.nodes.iter().map(|n| n.name.as_str()).collect();
    let words = ["StartTime=2026-11-26T09:30:15".to_string(), "EndTime=2026-11-26T10:30".into(), format!("Nodes={},{}", names[0], names[3]), "Users=alice,bob".into()];
    let s = ResvRequest::from_words(&words).unwrap().resolve(&c, 0, "root_1").unwrap();
    assert_eq!((s.name.as_str(), s.start, s.end), ("root_1", 1_795_685_415, 1_795_689_000));
    assert_eq!((s.nodes, s.users, s.maint, s.repeat), (ResvNodes::List(vec![0, 3]), vec!["alice".to_string(), "bob".into()], false, Repeat::Once));
    let r = r.unwrap();
    assert_eq!(r.flags, vec!["MAINT", "WEEKLY"]);
    let e = r.resolve(&c, 1000, "x").unwrap_err();
    assert_eq!(e.field, "Nodes", "{e}");
    let s = ResvRequest::from_words(&["start=now+2hours", "duration=60", "nodecnt=1", "features=new", "flags=maint,weekly"]).unwrap().resolve(&c, 1000, "m").unwrap();
    assert_eq!((s.start, s.end, s.repeat), (1000 + 7200, 1000 + 7200 + 3600, Repeat::Weekly));
    assert_eq!(s.nodes, ResvNodes::Count { count: 1, features: vec!["new".into()], partition: None });
    for (words, field) in [
        (&["StartTime=tomorrow", "Duration=1", "NodeCnt=1", "Flags=MAINT"][..], "StartTime"),
        (&["StartTime=now", "NodeCnt=1", "Flags=MAINT"], "Duration"),
        (&["StartTime=now", "Duration=1", "NodeCnt=1"], "Users"),
        (&["StartTime=now", "Duration=1", "NodeCnt=1", "Flags=MAINT,FLEX"], "Flags"),
        (&["StartTime=now", "Duration=1", "NodeCnt=1", "PartitionName=gpu", "Flags=MAINT"], "PartitionName"),
        (&["StartTime=now", "EndTime=now", "NodeCnt=1", "Flags=MAINT"], "EndTime"),
    ] {
        let e = ResvRequest::from_words(words).unwrap().resolve(&c, 0, "x").unwrap_err();
        assert_eq!(e.field, field, "{words:?}: {e}");
    }
    assert_eq!(ResvRequest::from_words(&["Colour=red"]).unwrap_err().field, "Colour");
    // a list longer than the cluster is refused before it is built
    let e = ResvRequest::from_words(&["StartTime=now", "Duration=1", "Nodes=x[1-5]", "Flags=MAINT"]).unwrap().resolve(&c, 0, "x").unwrap_err();
    assert!(e.field == "Nodes" && e.to_string().contains("range `1-5` is larger than 4"), "{e}");
    // a file's tables, with lines
    let text = "[[reservation]]\nname = \"m\"\nstart = 3600\nduration = \"2:00:00\"\nnodes = \"ALL\"\nflags = [\"maint\", \"daily\"]\n\n[[reservation]]\nname = \"x\"\nstart = 0\ncolour = \"red\"\n";
    let e = tessera_core::resv::request::from_toml(text, "r.toml").unwrap_err().to_string();
    assert!(e.starts_with("r.toml:11") || e.starts_with("r.toml:8"), "{e}");
    let ok = tessera_core::resv::request::from_toml(&text[..text.find("\n\n").unwrap()], "r.toml").unwrap();
    let s = ok[0].0.resolve(&c, 0, "r0").unwrap();
    assert_eq!((s.start, s.end, s.repeat, ok[0].1), (3600, 3600 + 7200, Repeat::Daily, Some(1)));
    // in a file an integer duration is seconds, as its instants are
    let ok = tessera_core::resv::request::from_toml("[[reservation]]\nstart = 10\nduration = 90\nnodes = \"ALL\"\nflags = [\"maint\"]\n", "r.toml").unwrap();
    let s = ok[0].0.resolve(&c, 0, "r0").unwrap();
    assert_eq!((s.start, s.end), (10, 100));
}
