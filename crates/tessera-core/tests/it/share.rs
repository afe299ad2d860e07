//! Accounts, Fair Tree usage and multifactor priority in the engine.

use super::env::replay;
use tessera_core::share::{Accounts, PriorityConfig, PriorityKind, UsageUnit, Weights};
use tessera_core::{Cluster, Effect, Engine, Input, JobId, JobSpec, Outcome, PolicyKind, Rejection, Time};

/// Fair share alone decides (age, size, partition and QOS weigh nothing).
fn fairshare_only() -> PriorityConfig {
    PriorityConfig { kind: PriorityKind::Multifactor, weights: Weights { age: 0, fairshare: 10_000, jobsize: 0, partition: 0, qos: 0 }, ..PriorityConfig::default() }
}

fn pool(cores: u32) -> Cluster {
    Cluster::pool(cores)
}

/// Groups 1 and 2, users 1 (group 1) and 2 (group 2).
fn two_groups() -> Accounts {
    Accounts::from_groups([(1, 1), (2, 2)])
}

fn job(acc: &Accounts, id: u64, user: i64, procs: u32, est: Time) -> JobSpec {
    let t = acc.ticket(&format!("u{user}"), None, None, 0).unwrap();
    JobSpec { ticket: Some(t), ..JobSpec::new(JobId(id), procs, est) }
}

#[test]
fn the_underserved_user_goes_first_once_usage_is_calculated() {
    let acc = two_groups();
    // user 1 runs the whole pool for 1000 s, then queues job 2; user 2's job
    // 3 comes later but user 2 has used nothing
    let jobs = [(0, job(&acc, 1, 1, 4, 1000), 1000), (10, job(&acc, 2, 1, 4, 1000), 1000), (20, job(&acc, 3, 2, 4, 1000), 1000)];
    let fifo = replay(Engine::new(PolicyKind::Easy, 4).unwrap(), &jobs);
    assert_eq!((fifo[&2], fifo[&3]), (1000, 2000), "submission order");
    let e = Engine::new(PolicyKind::Easy, 4).unwrap().with_sharing(acc.clone(), fairshare_only(), &pool(4)).unwrap();
    let fair = replay(e, &jobs);
    assert_eq!((fair[&2], fair[&3]), (2000, 1000), "fair share: user 2 first");
    // with submission order and accounts, the order stays
    let e = Engine::new(PolicyKind::Easy, 4).unwrap().with_sharing(acc, PriorityConfig::default(), &pool(4)).unwrap();
    assert_eq!(replay(e, &jobs), fifo);
}

#[test]
fn usage_is_charged_decayed_and_ranked() {
    let acc = two_groups();
    let cfg = PriorityConfig { half_life: 3600, calc_period: 60, ..fairshare_only() };
    let mut e = Engine::new(PolicyKind::Easy, 8).unwrap().with_sharing(acc.clone(), cfg, &pool(8)).unwrap();
    let mut out = Vec::new();
    e.handle(0, Input::submit(job(&acc, 1, 1, 2, 10_000)), &mut out);
    e.handle(0, Input::Pass, &mut out);
    assert!(out.iter().any(|x| matches!(x, Effect::Start { job: JobId(1), .. })));
    // user 2's job starts half-way through the first period
    e.handle(30, Input::submit(job(&acc, 2, 2, 1, 10_000)), &mut out);
    e.handle(30, Input::Pass, &mut out);
    // charged at each calculation: 2 cores for 3600 s, each second decayed as
    // Slurm does (no input in between: the 60 periods are charged at once)
    e.handle(3600, Input::Pass, &mut out);
    let v = e.shares().unwrap();
    let u1 = acc.user_assoc("u1", "g1").unwrap().0 as usize;
    let d = cfg.decay_per_second();
    let mut want = 0.0;
    for _ in 0..60 {
        want = want * d.powf(60.0) + 120.0 * d.powf(60.0);
    }
    assert!((v.rows[u1].raw_usage - want).abs() < 1e-12 * want, "{} vs {want}", v.rows[u1].raw_usage);
    // user 2: 30 s, then 59 whole periods
    let u2 = acc.user_assoc("u2", "g2").unwrap().0 as usize;
    let mut want2 = 30.0 * d.powf(30.0);
    for _ in 1..60 {
        want2 = want2 * d.powf(60.0) + 60.0 * d.powf(60.0);
    }
    assert!((v.rows[u2].raw_usage - want2).abs() < 1e-12 * want2, "{} vs {want2}", v.rows[u2].raw_usage);
    assert_eq!(v.rows[u1].fairshare, 0.5, "the user with more usage ranks second of two");
    assert_eq!(v.calculated, Some(3600));
    // the job ends: the rest is charged at once
    e.handle(3630, Input::Complete { job: JobId(1), outcome: Outcome::Exited(0) }, &mut out);
    let after_end = e.shares().unwrap().rows[u1].raw_usage;
    assert!((after_end - want - 60.0 * d.powf(30.0)).abs() < 1e-6, "the last 30 s are charged at the end");
    // an hour and a minute after the last calculation, usage has decayed over them
    e.handle(3600 + 3660, Input::Pass, &mut out);
    let later = e.shares().unwrap().rows[u1].raw_usage;
    assert!((later / after_end - cfg.decay(3660)).abs() < 1e-12, "{later} / {after_end}");
    assert!((cfg.decay(3660) - 0.5).abs() < 0.01);
}

#[test]
fn normalized_usage_counts_each_nodes_factor() {
    let toml = "[reference]\nhs06_per_core = 10.0\n\n[[nodetype]]\nname = \"slow\"\ncount = 1\ncores = 4\nhs06_per_core = 10.0\n\n[[nodetype]]\nname = \"fast\"\ncount = 1\ncores = 4\nhs06_per_core = 20.0\n\n[[partition]]\nname = \"all\"\nnodetypes = [\"slow\", \"fast\"]\n";
    let c = Cluster::from_toml(toml, "t.toml").unwrap();
    let acc = two_groups();
    for (unit, want) in [(UsageUnit::Raw, 8.0 * 100.0), (UsageUnit::Normalized, (4.0 + 8.0) * 100.0)] {
        let cfg = PriorityConfig { usage: unit, half_life: 0, ..fairshare_only() };
        let mut e = Engine::with_cluster(PolicyKind::Easy, &c).unwrap().with_sharing(acc.clone(), cfg, &c).unwrap();
        let mut out = Vec::new();
        e.handle(0, Input::submit(job(&acc, 1, 1, 8, 1000)), &mut out);
        e.handle(0, Input::Pass, &mut out);
        e.handle(100, Input::Complete { job: JobId(1), outcome: Outcome::Exited(0) }, &mut out);
        let u1 = acc.user_assoc("u1", "g1").unwrap().0 as usize;
        assert_eq!(e.shares().unwrap().rows[u1].raw_usage, want, "{unit:?}");
    }
}

#[test]
fn a_job_without_a_ticket_is_refused_where_there_are_accounts() {
    let mut e = Engine::new(PolicyKind::Easy, 4).unwrap().with_sharing(two_groups(), fairshare_only(), &pool(4)).unwrap();
    let mut out = Vec::new();
    e.handle(0, Input::submit(JobSpec::new(JobId(1), 1, 10)), &mut out);
    assert!(matches!(&out[..], [Effect::Rejected { reason: Rejection::InvalidSpec { field: "ticket", .. }, .. }]), "{out:?}");
}

#[test]
fn a_snapshot_keeps_usage_and_priorities() {
    let acc = two_groups();
    let mut e = Engine::new(PolicyKind::Easy, 4).unwrap().with_sharing(acc.clone(), fairshare_only(), &pool(4)).unwrap();
    let mut out = Vec::new();
    e.handle(0, Input::submit(job(&acc, 1, 1, 4, 1000)), &mut out);
    e.handle(0, Input::Pass, &mut out);
    e.handle(10, Input::submit(job(&acc, 2, 1, 4, 1000)), &mut out);
    e.handle(20, Input::submit(job(&acc, 3, 2, 4, 1000)), &mut out);
    // calculations made, their priorities not worked out yet (nothing could start)
    e.handle(600, Input::Pass, &mut out);
    let mut restored = Engine::restore(serde_json::from_str(&serde_json::to_string(&e.snapshot()).unwrap()).unwrap());
    assert_eq!(restored.shares().unwrap().rows, e.shares().unwrap().rows);
    let (mut a, mut b) = (Vec::new(), Vec::new());
    for (eng, out) in [(&mut e, &mut a), (&mut restored, &mut b)] {
        eng.handle(1000, Input::Complete { job: JobId(1), outcome: Outcome::Exited(0) }, out);
        eng.handle(1000, Input::Pass, out);
    }
    assert_eq!(a, b, "the restored engine decides as the original");
    assert!(matches!(a.iter().find(|x| matches!(x, Effect::Start { .. })), Some(Effect::Start { job: JobId(3), .. })), "user 2 first: {a:?}");
    assert_eq!(restored.priority_factors(JobId(2)), e.priority_factors(JobId(2)));
    assert!(e.priority_factors(JobId(2)).unwrap().fairshare < 1.0);
}

mod limits {
    use super::*;
    use tessera_core::share::{LimitReason, SharingConfig};
    use tessera_core::PendingReason;

    const FILE: &str = r#"
[[qos]]
name = "normal"
max_jobs_per_user = 3

[[qos]]
name = "short"
max_wall = "1:00:00"
max_tres_per_user = { cpu = 4 }

[[account]]
name = "physics"
grp_tres = { cpu = 6 }

[[account]]
name = "chem"

[[user]]
name = "ann"
account = "physics"
max_jobs = 2
max_submit_jobs = 5

[[user]]
name = "bob"
account = "physics"

[[user]]
name = "cat"
account = "chem"
"#;

    fn engine(policy: PolicyKind, cores: u32) -> (Engine, Accounts) {
        let c = SharingConfig::from_toml(FILE, "acct.toml").unwrap().unwrap();
        let e = Engine::new(policy, cores).unwrap().with_sharing(c.accounts.clone(), c.priority, &pool(cores)).unwrap();
        (e, c.accounts)
    }

    fn spec(acc: &Accounts, id: u64, user: &str, qos: Option<&str>, procs: u32, est: Time) -> JobSpec {
        JobSpec { ticket: Some(acc.ticket(user, None, qos, 0).unwrap()), ..JobSpec::new(JobId(id), procs, est) }
    }

    fn started(out: &[Effect]) -> Vec<u64> {
        out.iter().filter_map(|e| if let Effect::Start { job, .. } = e { Some(job.0) } else { None }).collect()
    }

    fn held(e: &Engine, id: u64) -> Option<LimitReason> {
        match e.pending_reason(0, JobId(id)) {
            Some(PendingReason::Limit { limit }) => Some(limit),
            _ => None,
        }
    }

    #[test]
    fn limits_hold_jobs_with_slurms_reasons_and_let_them_go() {
        for policy in [PolicyKind::Fcfs, PolicyKind::Easy, PolicyKind::Conservative] {
            let (mut e, acc) = engine(policy, 16);
            let mut out = Vec::new();
            // ann may run 2 jobs; physics 6 cores together; bob's QOS 3 jobs per user
            for (id, user, procs) in [(1, "ann", 1), (2, "ann", 1), (3, "ann", 1), (4, "bob", 2), (5, "bob", 2), (6, "bob", 1), (7, "cat", 1), (8, "cat", 1), (9, "cat", 1), (10, "cat", 1)] {
                e.handle(0, Input::submit(spec(&acc, id, user, None, procs, 100)), &mut out);
            }
            out.clear();
            e.handle(0, Input::Pass, &mut out);
            // ann: 1, 2 (her MaxJobs); bob: 4 (2 cores: physics at 4), 5 would make physics 6...
            assert_eq!(started(&out), [1, 2, 4, 5, 7, 8, 9], "{policy}");
            assert_eq!(held(&e, 3), Some(LimitReason::AssocMaxJobsLimit), "{policy}");
            assert_eq!(held(&e, 6), Some(LimitReason::AssocGrpCpuLimit), "{policy}: physics has its 6 cores");
            assert_eq!(held(&e, 10), Some(LimitReason::QOSMaxJobsPerUserLimit), "{policy}");
            assert_eq!(e.pending_reason(0, JobId(3)).unwrap().to_string(), "AssocMaxJobsLimit");
            // ann's job 1 ends: her job 3 may run, and it fits physics's cores
            out.clear();
            e.handle(50, Input::Complete { job: JobId(1), outcome: Outcome::Exited(0) }, &mut out);
            e.handle(50, Input::Pass, &mut out);
            assert_eq!(started(&out), [3], "{policy}");
            // cat's job ends: her fourth runs
            out.clear();
            e.handle(60, Input::Complete { job: JobId(7), outcome: Outcome::Exited(0) }, &mut out);
            e.handle(60, Input::Pass, &mut out);
            assert_eq!(started(&out), [10], "{policy}");
            assert_eq!(held(&e, 6), Some(LimitReason::AssocGrpCpuLimit), "{policy}");
        }
    }

    #[test]
    fn a_held_job_takes_no_reservation() {
        let (mut e, acc) = engine(PolicyKind::Easy, 4);
        let mut out = Vec::new();
        // ann runs 2 jobs; her third, first in the queue and wide, is held, so
        // cat's long job is not kept from the free cores by a reservation
        for (id, user, procs, est) in [(1, "ann", 1, 1000), (2, "ann", 1, 1000), (3, "ann", 4, 100), (4, "cat", 2, 5000)] {
            e.handle(0, Input::submit(spec(&acc, id, user, None, procs, est)), &mut out);
        }
        out.clear();
        e.handle(0, Input::Pass, &mut out);
        assert_eq!(started(&out), [1, 2, 4]);
        assert_eq!(held(&e, 3), Some(LimitReason::AssocMaxJobsLimit));
    }

    #[test]
    fn submit_limits_and_limits_never_met_refuse_the_job() {
        let (mut e, acc) = engine(PolicyKind::Easy, 16);
        let mut out = Vec::new();
        let refused = |out: &[Effect]| out.iter().find_map(|e| if let Effect::Rejected { reason: Rejection::OverLimit { reason, .. }, .. } = e { Some(*reason) } else { None });
        for id in 1..=5 {
            e.handle(0, Input::submit(spec(&acc, id, "ann", None, 1, 100)), &mut out);
        }
        assert_eq!(refused(&out), None);
        e.handle(0, Input::submit(spec(&acc, 6, "ann", None, 1, 100)), &mut out);
        assert_eq!(refused(&out), Some(LimitReason::AssocMaxSubmitJobLimit));
        let mut cases = vec![
            (spec(&acc, 7, "cat", Some("short"), 1, 7200), LimitReason::QOSMaxWallDurationPerJobLimit),
            (spec(&acc, 8, "cat", Some("short"), 8, 60), LimitReason::QOSMaxCpuPerUserLimit),
            (spec(&acc, 9, "bob", None, 7, 60), LimitReason::AssocGrpCpuLimit),
        ];
        for (s, want) in cases.drain(..) {
            out.clear();
            e.handle(0, Input::submit(s), &mut out);
            assert_eq!(refused(&out), Some(want));
        }
        // a refused job leaves no count behind: ann's jobs end, she submits again
        out.clear();
        e.handle(0, Input::Pass, &mut out);
        for id in started(&out) {
            e.handle(10, Input::Complete { job: JobId(id), outcome: Outcome::Exited(0) }, &mut out);
        }
        out.clear();
        e.handle(10, Input::submit(spec(&acc, 11, "ann", None, 1, 100)), &mut out);
        assert_eq!(refused(&out), None, "{out:?}");
    }
}

mod property {
    use super::*;
    use crate::shortcuts::arb_case;
    use proptest::prelude::*;
    use tessera_core::share::SharingConfig;

    /// Two accounts of unequal shares, three users, a MaxJobs and a GrpTRES
    /// limit; a 10-second calculation period and a 30-second half-life, so
    /// that the order changes often.
    const ACCOUNTS: &str = "[priority]\ntype = \"multifactor\"\ncalc_period = \"0:10\"\nhalf_life = \"0:30\"\nmax_age = \"1:00\"\n\n[[account]]\nname = \"g0\"\nshares = 3\ngrp_tres = { cpu = 24 }\n\n[[account]]\nname = \"g1\"\n\n[[user]]\nname = \"u0\"\naccount = \"g0\"\nmax_jobs = 2\n\n[[user]]\nname = \"u1\"\naccount = \"g0\"\n\n[[user]]\nname = \"u2\"\naccount = \"g1\"\n";

    proptest! {
        #![proptest_config(ProptestConfig { cases: 150, .. ProptestConfig::default() })]

        /// With fair share and limits, every job still starts, the invariants
        /// hold after every input, and the pass's shortcuts change no schedule.
        #[test]
        fn fair_share_and_limits_keep_the_invariants_and_the_shortcuts_exact((toml, jobs) in arb_case()) {
            let c = Cluster::from_toml(&toml, "shortcuts.toml").unwrap();
            let s = SharingConfig::from_toml(ACCOUNTS, "acct.toml").unwrap().unwrap();
            let jobs: Vec<(Time, JobSpec, Time)> = jobs
                .into_iter()
                .enumerate()
                .map(|(i, (t, spec, r))| (t, JobSpec { ticket: Some(s.accounts.ticket(&format!("u{}", i % 3), None, None, 0).unwrap()), ..spec }, r))
                .collect();
            for policy in [PolicyKind::Fcfs, PolicyKind::Easy, PolicyKind::Conservative] {
                let engine = || Engine::with_cluster(policy, &c).unwrap().with_sharing(s.accounts.clone(), s.priority, &c).unwrap();
                let fast = replay(engine(), &jobs);
                let every = replay(engine().without_shortcuts(), &jobs);
                prop_assert_eq!(fast, every, "{}", policy);
            }
        }
    }
}

mod qos_preemption {
    use tessera_core::share::SharingConfig;
    use tessera_core::{Cluster, Effect, Engine, Input, JobId, JobSpec, KillReason, Outcome, PolicyKind, Time};

    fn accounts(mode: &str) -> SharingConfig {
        let text = format!(
            "[[qos]]\nname = \"normal\"\npreempt_mode = \"{mode}\"\n\n[[qos]]\nname = \"high\"\npriority = 10\npreempt = [\"normal\"]\n\n[[account]]\nname = \"a\"\nqos = [\"normal\", \"high\"]\n\n[[user]]\nname = \"u\"\naccount = \"a\"\n"
        );
        SharingConfig::from_toml(&text, "qos.toml").unwrap().unwrap()
    }

    fn engine(mode: &str, policy: PolicyKind) -> (Engine, SharingConfig) {
        let c = accounts(mode);
        let e = Engine::with_cluster(policy, &Cluster::pool(4)).unwrap().with_sharing(c.accounts.clone(), c.priority, &Cluster::pool(4)).unwrap();
        (e, c)
    }

    fn job(c: &SharingConfig, id: u64, qos: &str, procs: u32, est: Time) -> JobSpec {
        JobSpec { ticket: Some(c.accounts.ticket("u", None, Some(qos), 0).unwrap()), ..JobSpec::new(JobId(id), procs, est) }
    }

    fn kinds(out: &[Effect]) -> Vec<String> {
        out.iter()
            .filter_map(|x| match x {
                Effect::Start { job, .. } => Some(format!("start {job}")),
                Effect::Suspend { job } => Some(format!("suspend {job}")),
                Effect::Resume { job } => Some(format!("resume {job}")),
                Effect::Kill { job, reason: KillReason::Requeue } => Some(format!("requeue {job}")),
                Effect::Requeued { job } => Some(format!("requeued {job}")),
                _ => None,
            })
            .collect()
    }

    #[test]
    fn a_high_qos_job_suspends_a_normal_one_which_resumes_after_it() {
        for policy in [PolicyKind::Fcfs, PolicyKind::Easy, PolicyKind::Conservative] {
            let (mut e, c) = engine("suspend", policy);
            let mut out = Vec::new();
            e.handle(0, Input::submit(job(&c, 1, "normal", 4, 1000)), &mut out);
            e.handle(0, Input::Pass, &mut out);
            e.handle(10, Input::submit(job(&c, 2, "high", 2, 100)), &mut out);
            // a normal job does not preempt
            e.handle(10, Input::submit(job(&c, 3, "normal", 2, 100)), &mut out);
            e.handle(10, Input::Pass, &mut out);
            assert_eq!(kinds(&out), ["start 1", "suspend 1", "start 2"], "{policy}");
            out.clear();
            e.handle(60, Input::Complete { job: JobId(2), outcome: Outcome::Exited(0) }, &mut out);
            e.handle(60, Input::Pass, &mut out);
            // the suspended job takes its cores back before job 3
            assert_eq!(kinds(&out), ["resume 1"], "{policy}");
            e.sanity_check();
        }
    }

    #[test]
    fn a_requeue_qos_is_killed_requeued_and_runs_again() {
        let (mut e, c) = engine("requeue", PolicyKind::Easy);
        let mut out = Vec::new();
        e.handle(0, Input::submit(job(&c, 1, "normal", 4, 1000)), &mut out);
        e.handle(0, Input::Pass, &mut out);
        e.handle(10, Input::submit(job(&c, 2, "high", 4, 100)), &mut out);
        e.handle(10, Input::Pass, &mut out);
        // a second pass before the kill is reported kills nothing more
        e.handle(11, Input::Pass, &mut out);
        assert_eq!(kinds(&out), ["start 1", "requeue 1"]);
        out.clear();
        e.handle(12, Input::Complete { job: JobId(1), outcome: Outcome::Signaled(9) }, &mut out);
        e.handle(12, Input::Pass, &mut out);
        assert_eq!(kinds(&out), ["requeued 1", "start 2"]);
        out.clear();
        e.handle(112, Input::Complete { job: JobId(2), outcome: Outcome::Exited(0) }, &mut out);
        e.handle(112, Input::Pass, &mut out);
        assert_eq!(kinds(&out), ["start 1"]);
        e.sanity_check();
    }
}

mod qos_property {
    use crate::shortcuts::arb_case;
    use proptest::prelude::*;
    use std::collections::{BTreeMap, BTreeSet};
    use tessera_core::share::SharingConfig;
    use tessera_core::{Cluster, Effect, Engine, Input, JobId, JobSpec, Outcome, PolicyKind, Time};

    /// A driver that runs jobs through suspensions, kills and requeues: each
    /// job's end moves with its suspensions, a kill ends it at once.
    #[derive(Default)]
    struct Run {
        work: BTreeMap<u64, Time>,
        end: BTreeMap<u64, (Time, f64)>,
        left: BTreeMap<u64, Time>,
        ends: BTreeMap<Time, BTreeSet<u64>>,
        killed: Vec<u64>,
        starts: Vec<(u64, Time)>,
        finished: BTreeSet<u64>,
        wakes: BTreeSet<Time>,
    }

    impl Run {
        fn unschedule(&mut self, job: u64) {
            if let Some((t, _)) = self.end.remove(&job) {
                if let Some(s) = self.ends.get_mut(&t) {
                    s.remove(&job);
                }
            }
        }
        fn schedule(&mut self, job: u64, at: Time, f: f64) {
            self.end.insert(job, (at, f));
            self.ends.entry(at).or_default().insert(job);
        }
    }

    impl tessera_core::Driver for Run {
        fn effect(&mut self, engine: &Engine, now: Time, x: Effect) {
            engine.sanity_check();
            match x {
                Effect::Start { job, alloc, .. } => {
                    self.starts.push((job.0, now));
                    assert!(self.starts.len() < 5_000, "starts without end: {:?}", &self.starts[self.starts.len() - 10..]);
                    self.schedule(job.0, now + tessera_core::scaled(self.work[&job.0], alloc.factor), alloc.factor);
                }
                Effect::Suspend { job } => {
                    let (t, _) = self.end[&job.0];
                    self.left.insert(job.0, t - now);
                    self.unschedule(job.0);
                }
                Effect::Resume { job } => {
                    let left = self.left.remove(&job.0).expect("suspended");
                    self.schedule(job.0, now + left, 1.0);
                }
                Effect::Kill { job, .. } => {
                    self.unschedule(job.0);
                    self.left.remove(&job.0);
                    self.killed.push(job.0);
                }
                Effect::Requeued { .. } => {}
                Effect::Finished(r) => {
                    self.finished.insert(r.spec.id.0);
                }
                Effect::WakeAt(w) => {
                    if w > now {
                        self.wakes.insert(w);
                    }
                }
                other => panic!("unexpected {other:?}"),
            }
        }

        fn due(&mut self, now: Time, inputs: &mut Vec<Input>) {
            for id in self.killed.drain(..) {
                inputs.push(Input::Complete { job: JobId(id), outcome: Outcome::Signaled(9) });
            }
            for id in self.ends.remove(&now).unwrap_or_default() {
                self.end.remove(&id);
                inputs.push(Input::Complete { job: JobId(id), outcome: Outcome::Exited(0) });
            }
        }
    }

    fn run(mut e: Engine, jobs: &[(Time, JobSpec, Time)]) -> Vec<(u64, Time)> {
        let mut r = Run { work: jobs.iter().map(|j| (j.1.id.0, j.2)).collect(), ..Default::default() };
        let mut arrivals: BTreeMap<Time, Vec<JobSpec>> = BTreeMap::new();
        for j in jobs {
            arrivals.entry(j.0).or_default().push(j.1);
        }
        loop {
            let next = [arrivals.keys().next(), r.ends.iter().find(|(_, s)| !s.is_empty()).map(|(t, _)| t), r.wakes.iter().next()];
            let Some(now) = next.into_iter().flatten().copied().min() else { break };
            r.wakes.remove(&now);
            let mut inputs = Vec::new();
            tessera_core::Driver::due(&mut r, now, &mut inputs);
            inputs.extend(arrivals.remove(&now).unwrap_or_default().into_iter().map(Input::submit));
            tessera_core::step(&mut e, now, inputs, true, &mut r);
            e.sanity_check();
            assert!(now < 1_000_000, "runs away");
        }
        assert_eq!(r.finished.len(), jobs.len(), "every job ends");
        r.starts
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 120, .. ProptestConfig::default() })]

        /// A third of the jobs are of a QOS that preempts the others' (by
        /// suspension or requeue): every job ends, the invariants hold after
        /// every input, and the shortcuts change no schedule.
        #[test]
        fn qos_preemption_keeps_the_invariants_and_every_job_ends((toml, jobs) in arb_case(), requeue in any::<bool>()) {
            let c = Cluster::from_toml(&toml, "qos.toml").unwrap();
            let text = format!("[[qos]]\nname = \"normal\"\npreempt_mode = \"{}\"\n\n[[qos]]\nname = \"high\"\npreempt = [\"normal\"]\n\n[[account]]\nname = \"a\"\nqos = [\"normal\", \"high\"]\n\n[[user]]\nname = \"u\"\naccount = \"a\"\n", if requeue { "requeue" } else { "suspend" });
            let s = SharingConfig::from_toml(&text, "acct.toml").unwrap().unwrap();
            let jobs: Vec<(Time, JobSpec, Time)> = jobs
                .into_iter()
                .enumerate()
                .map(|(i, (t, spec, r))| (t, JobSpec { ticket: Some(s.accounts.ticket("u", None, Some(if i % 3 == 0 { "high" } else { "normal" }), 0).unwrap()), ..spec }, r))
                .collect();
            for policy in [PolicyKind::Fcfs, PolicyKind::Easy, PolicyKind::Conservative] {
                let engine = || Engine::with_cluster(policy, &c).unwrap().with_sharing(s.accounts.clone(), s.priority, &c).unwrap();
                let fast = run(engine(), &jobs);
                let every = run(engine().without_shortcuts(), &jobs);
                prop_assert_eq!(fast, every, "{}", policy);
            }
        }
    }
}

mod editing {
    use tessera_core::share::{sacctmgr, SharingConfig};
    use tessera_core::{Cluster, Effect, Engine, Input, JobId, JobSpec, Outcome, PolicyKind, Rejection};

    const FILE: &str = "[priority]\ntype = \"multifactor\"\ncalc_period = \"0:10\"\n\n[[account]]\nname = \"physics\"\nshares = 3\n\n[[account]]\nname = \"chem\"\n\n[[user]]\nname = \"ann\"\naccount = \"physics\"\n\n[[user]]\nname = \"bob\"\naccount = \"chem\"\n";

    #[test]
    fn accounts_change_live_keeping_usage_jobs_and_limits() {
        let c = SharingConfig::from_toml(FILE, "a.toml").unwrap().unwrap();
        let pool = Cluster::pool(4);
        let mut e = Engine::with_cluster(PolicyKind::Easy, &pool).unwrap().with_sharing(c.accounts.clone(), c.priority, &pool).unwrap();
        let mut out = Vec::new();
        let job = |acc: &tessera_core::share::Accounts, id, user: &str| JobSpec { ticket: Some(acc.ticket(user, None, None, 0).unwrap()), ..JobSpec::new(JobId(id), if id == 1 { 4 } else { 2 }, 100) };
        e.handle(0, Input::submit(job(&c.accounts, 1, "ann")), &mut out);
        e.handle(0, Input::Pass, &mut out);
        e.handle(50, Input::Pass, &mut out);
        let usage = |e: &Engine, account: &str| {
            let v = e.shares().unwrap();
            let i = v.accounts.account(account).unwrap().0 as usize;
            v.rows[i].raw_usage
        };
        let before = usage(&e, "physics");
        assert!(before > 0.0);
        // a new account before physics in no way; physics' shares change; a
        // user with a MaxJobs of 0 holds its job
        let mut acc = e.shares().unwrap().accounts.clone();
        for words in [&["add", "account", "bio", "Parent=root", "Fairshare=2"][..], &["modify", "account", "physics", "set", "Fairshare=5"], &["add", "user", "cat", "Account=bio", "MaxJobs=1"], &["delete", "user", "bob"]] {
            acc = sacctmgr::apply(&acc, words).unwrap_or_else(|m| panic!("{words:?}: {m}"));
        }
        out.clear();
        e.handle(60, Input::SetAccounts(Box::new(acc.clone())), &mut out);
        assert!(out.iter().all(|x| !matches!(x, Effect::Rejected { .. })), "{out:?}");
        assert!((usage(&e, "physics") - before).abs() < 1e-9 * before, "usage kept by name");
        assert_eq!(e.shares().unwrap().accounts.get(e.shares().unwrap().accounts.account("physics").unwrap()).shares, 5);
        e.handle(61, Input::submit(job(&acc, 2, "cat")), &mut out);
        e.handle(61, Input::submit(job(&acc, 3, "cat")), &mut out);
        e.handle(100, Input::Complete { job: JobId(1), outcome: Outcome::Exited(0) }, &mut out);
        e.handle(100, Input::Pass, &mut out);
        assert_eq!(e.pending_reason(100, JobId(3)).map(|r| r.to_string()).as_deref(), Some("AssocMaxJobsLimit"));
        // an account a live job charges cannot go
        out.clear();
        let gone = sacctmgr::apply(&acc, &["delete", "account", "bio"]).unwrap();
        e.handle(101, Input::SetAccounts(Box::new(gone)), &mut out);
        assert!(matches!(&out[..], [Effect::Rejected { reason: Rejection::CannotReconfigure(m), .. }] if m.contains("job 2") && m.contains("cat")), "{out:?}");
        // lifting the limit lets it run
        let lifted = sacctmgr::apply(&acc, &["modify", "user", "cat", "set", "MaxJobs=-1"]).unwrap();
        out.clear();
        e.handle(102, Input::SetAccounts(Box::new(lifted)), &mut out);
        e.handle(102, Input::Pass, &mut out);
        assert!(out.iter().any(|x| matches!(x, Effect::Start { job: JobId(3), .. })), "{out:?}");
        // the state with accounts, limits and QOS counts saves as JSON and reads back
        let text = serde_json::to_string(&e.snapshot()).expect("a state with limits serializes");
        let back: tessera_core::Snapshot = serde_json::from_str(&text).unwrap();
        assert_eq!(serde_json::to_string(&back).unwrap(), text);
        // words sacctmgr would refuse
        for (words, what) in [(&["add", "account", "physics"][..], "exists"), (&["add", "user", "dan"], "Account="), (&["modify", "account", "physics", "set", "Colour=red"], "Colour"), (&["delete", "account", "root"], "root")] {
            let m = sacctmgr::apply(&acc, words).unwrap_err();
            assert!(m.contains(what), "{words:?}: {m}");
        }
    }

    /// QOS made, changed and deleted live (sacctmgr's `add|modify|delete
    /// qos`): a new QOS's priority orders the queue at once; one in use, or
    /// named by an association or another QOS, stays; deleting another moves
    /// the later QOS down without changing what anything names.
    #[test]
    fn qos_change_live_by_name() {
        let c = SharingConfig::from_toml(FILE, "a.toml").unwrap().unwrap();
        let pool = Cluster::pool(2);
        let mut e = Engine::with_cluster(PolicyKind::Fcfs, &pool).unwrap().with_sharing(c.accounts.clone(), c.priority, &pool).unwrap();
        let mut acc = c.accounts.clone();
        for words in [&["add", "qos", "low", "Priority=1"][..], &["add", "qos", "high", "Priority=100", "UsageFactor=2", "MaxJobsPerUser=5", "Preempt=low", "PreemptMode=requeue"], &["modify", "user", "bob", "set", "QOS=normal,high,low", "DefaultQOS=high"]] {
            acc = sacctmgr::apply(&acc, words).unwrap_or_else(|m| panic!("{words:?}: {m}"));
        }
        let high = acc.qos_id("high").unwrap();
        assert_eq!((acc.qos(high).priority, acc.qos(high).usage_factor, acc.qos(high).max_jobs_per_user), (100, 2.0, Some(5)));
        assert_eq!(acc.qos(high).preempt, vec![acc.qos_id("low").unwrap()]);
        let mut out = Vec::new();
        e.handle(0, Input::SetAccounts(Box::new(acc.clone())), &mut out);
        assert!(out.iter().all(|x| !matches!(x, Effect::Rejected { .. })), "{out:?}");
        // the whole pool busy; ann's job first, then bob's under his default, high
        let job = |id, user: &str, qos: Option<&str>| JobSpec { ticket: Some(acc.ticket(user, None, qos, 0).unwrap()), ..JobSpec::new(JobId(id), 2, 100) };
        e.handle(1, Input::submit(job(1, "ann", None)), &mut out);
        e.handle(1, Input::Pass, &mut out);
        for (id, user, qos) in [(2, "ann", None), (3, "bob", Some("low")), (4, "bob", None)] {
            e.handle(2, Input::submit(job(id, user, qos)), &mut out);
        }
        e.handle(2, Input::Pass, &mut out);
        out.clear();
        e.handle(101, Input::Complete { job: JobId(1), outcome: Outcome::Exited(0) }, &mut out);
        e.handle(101, Input::Pass, &mut out);
        assert!(out.iter().any(|x| matches!(x, Effect::Start { job: JobId(4), .. })), "QOS high's job goes first: {out:?}");
        // in use, or named: stays
        for (words, what) in [(&["delete", "qos", "high"][..], "bob"), (&["delete", "qos", "normal"], "normal"), (&["add", "qos", "high"], "exists"), (&["modify", "qos", "high", "set", "PreemptMode=never"], "suspend or requeue"), (&["modify", "qos", "high", "set", "Preempt=none"], "unknown QOS"), (&["modify", "qos", "high", "set", "Preempt=high"], "itself")] {
            let m = sacctmgr::apply(&acc, words).unwrap_err();
            assert!(m.contains(what), "{words:?}: {m}");
        }
        let no_low = sacctmgr::apply(&sacctmgr::apply(&acc, &["modify", "user", "bob", "set", "QOS=normal,high"]).unwrap(), &["modify", "qos", "high", "set", "Preempt="]).unwrap();
        let m = sacctmgr::apply(&acc, &["delete", "qos", "low"]).unwrap_err();
        assert!(m.contains("bob") || m.contains("high"), "{m}");
        let gone = sacctmgr::apply(&no_low, &["delete", "qos", "low"]).unwrap();
        assert!(gone.qos_id("low").is_none());
        let bob = gone.user_assoc("bob", "chem").unwrap();
        assert_eq!(gone.get(bob).default_qos.map(|q| gone.qos(q).name.as_str()), Some("high"), "what bob names is kept by name");
        // a QOS a live job runs under cannot go (job 3 is queued under low)
        out.clear();
        e.handle(102, Input::SetAccounts(Box::new(gone)), &mut out);
        assert!(matches!(&out[..], [Effect::Rejected { reason: Rejection::CannotReconfigure(m), .. }] if m.contains("job 3") && m.contains("low")), "{out:?}");
    }
}

/// A history seeds usage as the engine would have charged it had it run
/// those jobs (`Engine::with_history`): the same job run live up to an
/// instant, or given as past, leaves the same usage there, and the
/// association with the heavier past goes second.
#[test]
fn a_history_seeds_the_usage_the_engine_would_have_charged() {
    use tessera_core::share::PastJob;
    let acc = two_groups();
    let cfg = PriorityConfig { half_life: 3600, calc_period: 60, ..fairshare_only() };
    let u1 = acc.user_assoc("u1", "g1").unwrap().0 as usize;
    for (start, end, at) in [(0, 3630, 7200), (15, 50, 600), (0, 7200, 7200), (70, 4000, 9000)] {
        let mut live = Engine::new(PolicyKind::Easy, 8).unwrap().with_sharing(acc.clone(), cfg, &pool(8)).unwrap();
        let mut out = Vec::new();
        live.handle(start, Input::submit(job(&acc, 1, 1, 2, 100_000)), &mut out);
        live.handle(start, Input::Pass, &mut out);
        // woken at every calculation, as a driver is (the engine asks for them)
        let mut instants: Vec<Time> = (start / 60 + 1..=at / 60).map(|k| k * 60).chain([end, at]).collect();
        instants.sort_unstable();
        instants.dedup();
        for t in instants {
            if t == end {
                live.handle(t, Input::Complete { job: JobId(1), outcome: Outcome::Exited(0) }, &mut out);
            }
            live.handle(t, Input::Pass, &mut out);
        }
        let want = live.shares().unwrap().rows[u1].raw_usage;
        let past = PastJob { ticket: job(&acc, 1, 1, 2, 1).ticket.unwrap(), start, end, partition: 0, parts: vec![(2, 0, 0, 1.0)] };
        let mut seeded = Engine::new(PolicyKind::Easy, 8).unwrap().with_sharing(acc.clone(), cfg, &pool(8)).unwrap().with_history(&[past], at).unwrap();
        seeded.handle(at, Input::Pass, &mut out);
        let got = seeded.shares().unwrap().rows[u1].raw_usage;
        assert!(want > 0.0 && (got - want).abs() <= 1e-9 * want, "[{start}, {end}] at {at}: seeded {got}, charged live {want}");
    }
    // the heavier past goes second: user 1 ran the pool for an hour before
    let past = PastJob { ticket: job(&acc, 9, 1, 4, 1).ticket.unwrap(), start: -3600, end: 0, partition: 0, parts: vec![(4, 0, 0, 1.0)] };
    let jobs = [(0, job(&acc, 1, 1, 4, 100), 100), (0, job(&acc, 2, 2, 4, 100), 100), (0, job(&acc, 3, 1, 4, 100), 100)];
    let fresh = replay(Engine::new(PolicyKind::Easy, 4).unwrap().with_sharing(acc.clone(), fairshare_only(), &pool(4)).unwrap(), &jobs);
    assert_eq!((fresh[&1], fresh[&2]), (0, 100), "without a past, submission order among equals");
    let e = Engine::new(PolicyKind::Easy, 4).unwrap().with_sharing(acc.clone(), fairshare_only(), &pool(4)).unwrap().with_history(&[past], 0).unwrap();
    let seeded = replay(e, &jobs);
    assert_eq!((seeded[&2], seeded[&1]), (0, 100), "user 2 first: user 1's past usage counts");
    // only an engine with accounts, before any job, takes a history
    assert!(matches!(Engine::new(PolicyKind::Easy, 4).unwrap().with_history(&[], 0), Err(tessera_core::share::SharingError::NoAccounts)));
}

mod charged {
    use super::*;
    use proptest::prelude::*;
    use tessera_core::share::PastJob;

    proptest! {
        #![proptest_config(ProptestConfig { cases: 200, .. ProptestConfig::default() })]

        /// Usage charged association by association (the jobs that ran
        /// through a period as one flow) is what charging each job on its own
        /// gives: jobs of both users, overlapping, starting and ending on and
        /// off the calculations, leave the usage a history of the same jobs
        /// seeds.
        #[test]
        fn usage_charged_by_association_is_what_each_job_charges(
            jobs in prop::collection::vec((0i64..600, 1i64..900, 1i64..=2, 1u32..=4), 1..10),
            extra in 0i64..300,
        ) {
            let acc = two_groups();
            let cfg = PriorityConfig { half_life: 3600, calc_period: 60, ..fairshare_only() };
            // a calculation's instant, as of which both usages are
            let at = (jobs.iter().map(|&(s, d, _, _)| s + d).max().unwrap() + extra + 59) / 60 * 60;
            let mut live = Engine::new(PolicyKind::Easy, 64).unwrap().with_sharing(acc.clone(), cfg, &pool(64)).unwrap();
            let mut instants: Vec<Time> = (0..=at / 60).map(|k| k * 60).chain(jobs.iter().flat_map(|&(s, d, _, _)| [s, s + d])).chain([at]).collect();
            instants.sort_unstable();
            instants.dedup();
            let mut out = Vec::new();
            for &t in &instants {
                for (i, &(s, d, _, _)) in jobs.iter().enumerate() {
                    if s + d == t {
                        live.handle(t, Input::Complete { job: JobId(i as u64 + 1), outcome: Outcome::Exited(0) }, &mut out);
                    }
                }
                for (i, &(s, _, user, procs)) in jobs.iter().enumerate() {
                    if s == t {
                        live.handle(t, Input::submit(job(&acc, i as u64 + 1, user, procs, 100_000)), &mut out);
                    }
                }
                live.handle(t, Input::Pass, &mut out);
            }
            let started = out.iter().filter(|x| matches!(x, Effect::Start { .. })).count();
            prop_assert_eq!(started, jobs.len(), "every job starts at its submission");
            let past: Vec<PastJob> = jobs
                .iter()
                .map(|&(start, d, user, procs)| PastJob { ticket: job(&acc, 1, user, 1, 1).ticket.unwrap(), start, end: start + d, partition: 0, parts: vec![(procs, 0, 0, 1.0)] })
                .collect();
            let mut seeded = Engine::new(PolicyKind::Easy, 64).unwrap().with_sharing(acc.clone(), cfg, &pool(64)).unwrap().with_history(&past, at).unwrap();
            seeded.handle(at, Input::Pass, &mut out);
            for user in ["u1", "u2"] {
                let a = acc.user_assoc(user, if user == "u1" { "g1" } else { "g2" }).unwrap().0 as usize;
                let want = seeded.shares().unwrap().rows[a].raw_usage;
                let got = live.shares().unwrap().rows[a].raw_usage;
                prop_assert!((got - want).abs() <= 1e-9 * want.max(1e-300), "{}: charged live {}, each job's charge {}", user, got, want);
            }
        }
    }
}
