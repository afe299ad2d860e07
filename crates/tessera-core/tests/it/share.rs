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
    // charged at each calculation: 2 cores for 3600 s, each second decayed as Slurm does
    e.handle(3600, Input::Pass, &mut out);
    let v = e.shares().unwrap();
    let u1 = acc.user_assoc("u1", "g1").unwrap().0 as usize;
    let d = cfg.decay_per_second();
    let mut want = 0.0;
    for _ in 0..60 {
        want = want * d.powf(60.0) + 120.0 * d.powf(60.0);
    }
    assert!((v.rows[u1].raw_usage - want).abs() < 1e-6 * want, "{} vs {want}", v.rows[u1].raw_usage);
    assert_eq!(v.rows[u1].fairshare, 0.5, "the user with usage ranks second of two");
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
    e.handle(600, Input::Pass, &mut out);
    let restored = Engine::restore(serde_json::from_str(&serde_json::to_string(&e.snapshot()).unwrap()).unwrap());
    assert_eq!(restored.priority_factors(JobId(3)), e.priority_factors(JobId(3)));
    assert!(e.priority_factors(JobId(3)).unwrap().priority > e.priority_factors(JobId(2)).unwrap().priority);
    assert_eq!(restored.queue().collect::<Vec<_>>(), [JobId(3), JobId(2)]);
}
