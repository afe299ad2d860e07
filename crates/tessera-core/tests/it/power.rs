//! PARM through the engine: a small event loop drives `Engine::parm` (submit,
//! complete at the engine's expected ends, pass) and checks the power invariant
//! and each variant's rules after every step.

use tessera_core::power::{AppProfile, Downey, ParmConfig, ParmVariant, PowerJob, PowerMachine, Solver, PRESETS};
use tessera_core::{Effect, Engine, Input, JobId, JobIdx, JobSpec, Outcome, PendingReason, Time};

fn machine(nodes: u32, budget_w: f64) -> PowerMachine {
    // the paper's node: CPU 30..60 W, memory 18 W + base 38 W
    PowerMachine { nodes, budget_w, node_base_w: 56.0, idle_w: 0.0, cap_levels_w: vec![30.0, 33.0, 36.0, 44.0, 50.0, 60.0], node_ids: Vec::new(), node_cores: 0 }
}

fn job(app: AppProfile, t1: f64, n_min: u32, n_max: u32) -> PowerJob {
    PowerJob { app, scaling: Downey { a: n_max as f64, sigma: 0.5 }, t1, n_min, n_max, mem_mb: 1024.0 * n_max as f64, malleable: true }
}

struct Run {
    e: Engine,
    budget_w: f64,
    nodes: u32,
    ends: Vec<Option<Time>>,
    /// Per job: (time, nodes, cap) of every configuration it ran in.
    configs: Vec<Vec<(Time, u32, f64)>>,
    /// Per job: the node it started on (its first node, kept through resizes).
    first: Vec<Option<u32>>,
    finished: usize,
}

impl Run {
    fn check(&self) {
        self.e.sanity_check();
        let p = self.e.as_parm().unwrap();
        assert!(p.power_w() <= self.budget_w + 1e-6, "power {} W over the budget {} W", p.power_w(), self.budget_w);
        assert!(p.used_nodes() <= self.nodes);
        // every running job holds as many named nodes as its size, its first
        // node kept since its start, and no node is held twice
        let mut held = std::collections::BTreeSet::new();
        for (i, first) in self.first.iter().enumerate() {
            let (Some(first), Some(_)) = (first, self.ends[i]) else { continue };
            let a = self.e.allocation(JobId(i as u64)).expect("a running job has an allocation");
            let (n, _) = self.e.power_config(JobId(i as u64)).unwrap();
            assert_eq!(a.parts.len() as u32, n, "job {i}: {a:?}");
            assert_eq!(a.parts[0].node, *first, "job {i} keeps its first node");
            for p in &a.parts {
                assert!(p.node < self.nodes && held.insert(p.node), "node {} held twice or outside the machine", p.node);
            }
        }
    }

    fn step(&mut self, now: Time, input: Input) {
        let mut out = Vec::new();
        self.e.handle(now, input, &mut out);
        for eff in out {
            match eff {
                Effect::Start { job, limit, alloc } => {
                    assert_eq!(limit, None, "PARM's jobs end by their configuration");
                    self.first[job.0 as usize] = Some(alloc.parts[0].node);
                }
                Effect::Configure { job, nodes, cap_w, end } => {
                    self.configs[job.0 as usize].push((now, nodes, cap_w));
                    assert!(end >= now);
                    self.ends[job.0 as usize] = Some(end);
                }
                Effect::Finished(r) => {
                    assert!(r.usage.is_some_and(|u| u.energy_j > 0.0 || r.start == Some(r.end)), "a PARM record carries its energy");
                    self.ends[r.spec.id.0 as usize] = None;
                    self.first[r.spec.id.0 as usize] = None;
                }
                Effect::WakeAt(_) => {}
                other => panic!("unexpected effect {other:?}"),
            }
        }
        self.check();
    }
}

/// Drive a workload of (submit, job) to the end.
fn drive(m: PowerMachine, cfg: ParmConfig, jobs: &[(Time, PowerJob)]) -> Run {
    drive_acking(m, cfg, jobs, false)
}

/// [`drive`], a shrunk job acknowledging at once (`ack`: with
/// `resize_ack_s`), then another pass at the same instant.
fn drive_acking(m: PowerMachine, cfg: ParmConfig, jobs: &[(Time, PowerJob)], ack: bool) -> Run {
    let mut r = Run { budget_w: m.budget_w, nodes: m.nodes, e: Engine::parm(m, cfg), ends: vec![], configs: vec![], first: vec![], finished: 0 };
    let mut next = 0;
    loop {
        let t_sub = jobs.get(next).map(|j| j.0);
        let t_end = r.ends.iter().flatten().copied().min();
        let now = match (t_sub, t_end) {
            (None, None) => break,
            (a, b) => a.unwrap_or(Time::MAX).min(b.unwrap_or(Time::MAX)),
        };
        for i in 0..r.ends.len() {
            if r.ends[i] == Some(now) {
                r.step(now, Input::Complete { job: JobId(i as u64), outcome: Outcome::Exited(0) });
                assert_eq!(r.ends[i], None, "job {i} left the engine");
                r.finished += 1;
            }
        }
        while let Some(&(t, pj)) = jobs.get(next).filter(|j| j.0 == now) {
            r.ends.push(None);
            r.configs.push(Vec::new());
            r.first.push(None);
            r.step(t, Input::submit(JobSpec { power: Some(pj), ..JobSpec::new(JobId(next as u64), pj.n_max, 1_000_000) }));
            next += 1;
        }
        r.step(now, Input::Pass);
        while ack {
            let owing: Vec<u64> = (0..r.ends.len() as u64).filter(|&i| r.e.awaits_resize(JobId(i))).collect();
            if owing.is_empty() {
                break;
            }
            for i in owing {
                r.step(now, Input::Resized(JobId(i)));
            }
            r.step(now, Input::Pass);
        }
    }
    r
}

/// Shrunk jobs that acknowledge at once get the simulator's decisions: what
/// waited for the nodes they gave up is decided again at the same instant,
/// and the same way (so a live run and its simulation agree).
#[test]
fn acknowledged_at_once_the_decisions_are_the_simulators() {
    // per job, its configuration at the end of each instant
    let settled = |r: &Run| -> Vec<Vec<(Time, u32, u64)>> {
        r.configs.iter().map(|c| {
            let mut v: Vec<(Time, u32, u64)> = Vec::new();
            for &(t, n, p) in c {
                if v.last().is_some_and(|l| l.0 == t) {
                    v.pop();
                }
                v.push((t, n, p.to_bits()));
            }
            v
        }).collect()
    };
    let mut resized = 0;
    for seed in 0..40u64 {
        // the PARM testbed's shape: 38 nodes under 3,300 W, 10 jobs of 4..12
        // to 3 times as many nodes arriving 90 s apart on average
        let jobs: Vec<(Time, PowerJob)> = workload(seed).into_iter().take(10).map(|(t, j)| {
            let n_min = 4 + j.n_max % 9;
            (t / 40, PowerJob { n_min, n_max: 3 * n_min, scaling: Downey { a: 3.0 * n_min as f64, sigma: 0.5 }, t1: j.t1 / 40.0, ..j })
        }).collect();
        let cfg = ParmConfig { expand_boots: false, fse: 30, ..if seed % 2 == 0 { ParmConfig::new(ParmVariant::WSE) } else { ParmConfig::tessera() } };
        let plain = drive(machine(38, 3300.0), cfg.clone(), &jobs);
        let acked = drive_acking(machine(38, 3300.0), ParmConfig { resize_ack_s: Some(30), ..cfg }, &jobs, true);
        assert_eq!(settled(&acked), settled(&plain), "seed {seed}");
        resized += plain.configs.iter().filter(|c| c.windows(2).any(|w| w[1].1 < w[0].1)).count();
    }
    assert!(resized > 0, "some job was shrunk");
}

/// Seeded random workloads: 40 jobs on 24 nodes whose budget powers 10 at full power.
fn workload(seed: u64) -> Vec<(Time, PowerJob)> {
    let mut s = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
    let mut r = move || {
        s ^= s << 13;
        s ^= s >> 7;
        s ^= s << 17;
        (s >> 11) as f64 / (1u64 << 53) as f64
    };
    let mut t = 0;
    (0..40)
        .map(|_| {
            t += (r() * 400.0) as Time;
            let n_max = 1 + (r() * 12.0) as u32;
            let n_min = ((n_max as f64 * (0.2 + 0.4 * r())).ceil() as u32).max(1);
            let app = PRESETS[(r() * 5.0) as usize % 5];
            (t, job(app, 200.0 + r() * 6000.0, n_min, n_max))
        })
        .collect()
}

#[test]
fn every_variant_and_solver_stays_within_the_budget_and_finishes_every_job() {
    let solvers = [Solver::Structured, Solver::Milp { node_limit: 300, time_limit_ms: None }];
    for seed in 0..4 {
        let jobs = workload(seed);
        for variant in [ParmVariant::NoMM, ParmVariant::NoSE, ParmVariant::WSE] {
            for solver in solvers {
                let mut cfg = ParmConfig::new(variant);
                cfg.solver = solver;
                let r = drive(machine(24, 10.0 * 116.0), cfg.clone(), &jobs);
                assert_eq!(r.finished, jobs.len(), "seed {seed} {variant} {solver}");
                for (i, c) in r.configs.iter().enumerate() {
                    let pj = jobs[i].1;
                    assert!(!c.is_empty(), "job {i} never ran");
                    for &(_, n, _) in c {
                        assert!(n >= pj.n_min && n <= pj.n_max, "job {i} on {n} nodes outside [{}, {}]", pj.n_min, pj.n_max);
                    }
                    let sizes: Vec<(Time, u32)> = c.iter().map(|&(t, n, _)| (t, n)).collect();
                    match variant {
                        ParmVariant::NoMM => assert!(sizes.iter().all(|&(_, n)| n == pj.n_min), "noMM job {i} not at its minimum"),
                        ParmVariant::NoSE => assert!(sizes.iter().all(|&(_, n)| n == sizes[0].1), "noSE job {i} resized: {sizes:?}"),
                        ParmVariant::WSE => {
                            // resizes at least f_se apart (the start does not count: the paper's f_se runs from a resize)
                            let (mut n_now, mut last): (u32, Option<Time>) = (sizes[0].1, None);
                            for &(t, n) in &sizes[1..] {
                                if n != n_now {
                                    if let Some(l) = last {
                                        assert!(t - l >= cfg.fse, "wSE job {i} resized at {t}, {} s after its resize at {l}", t - l);
                                    }
                                    (n_now, last) = (n, Some(t));
                                }
                            }
                        }
                    }
                }
            }
        }
    }
}

#[test]
fn malleable_jobs_shrink_to_admit_new_ones() {
    // one job takes the whole machine, a second arrives after f_se: with α = 0 (total
    // speedup, sublinear scaling) wSE shrinks the first, noSE makes the second wait
    let jobs = vec![(0, job(PRESETS[0], 40_000.0, 2, 8)), (600, job(PRESETS[0], 4_000.0, 2, 8))];
    let cfg = |v| ParmConfig { alpha: 0.0, ..ParmConfig::new(v) };
    let wse = drive(machine(8, 8.0 * 116.0), cfg(ParmVariant::WSE), &jobs);
    let nose = drive(machine(8, 8.0 * 116.0), cfg(ParmVariant::NoSE), &jobs);
    assert_eq!(wse.configs[0][0].1, 8, "the first job starts on all 8 nodes");
    assert!(wse.configs[0].iter().any(|&(t, n, _)| t == 600 && n < 8), "wSE shrank the first job at 600: {:?}", wse.configs[0]);
    assert_eq!(wse.configs[1][0].0, 600, "wSE starts the second job on arrival");
    assert!(nose.configs[1][0].0 > 600, "noSE's second job waits for nodes");
}

#[test]
fn a_job_waiting_for_power_says_so() {
    // 10 nodes but watts for 3 at full power; two rigid 3-node... the second cannot
    // get even its smallest, lowest-cap shape while the first runs
    let m = machine(10, 3.0 * 116.0);
    let mut e = Engine::parm(m, ParmConfig::new(ParmVariant::NoSE));
    let mut out = Vec::new();
    e.handle(0, Input::submit(JobSpec { power: Some(job(PRESETS[0], 9_000.0, 3, 3)), ..JobSpec::new(JobId(1), 3, 100_000) }), &mut out);
    e.handle(0, Input::Pass, &mut out);
    e.handle(1, Input::submit(JobSpec { power: Some(job(PRESETS[0], 9_000.0, 2, 2)), ..JobSpec::new(JobId(2), 2, 100_000) }), &mut out);
    e.handle(1, Input::Pass, &mut out);
    e.sanity_check();
    assert!(e.as_parm().unwrap().config_of(JobIdx(0)).is_some(), "the first job runs");
    assert!(e.as_parm().unwrap().config_of(JobIdx(1)).is_none(), "the second waits");
    match e.pending_reason(1, JobId(2)) {
        Some(PendingReason::PowerBudget { needed_w, free_w }) => {
            assert_eq!(needed_w, 2 * (30 + 56), "two nodes at the lowest cap");
            assert!(free_w < needed_w);
        }
        other => panic!("expected PowerBudget, got {other:?} (7 nodes are free)"),
    }
}

#[test]
fn resize_costs_follow_the_paper() {
    let e = tessera_core::power::ParmEngine::new(machine(64, 64.0 * 116.0), ParmConfig::new(ParmVariant::WSE));
    let pj = job(PRESETS[2], 1000.0, 4, 32);
    // expanding 8 -> 16 boots 8 nodes: 8 × 0.01904 + 72.73 s, plus redistribution
    let expand = e.resize_cost(&pj, 8, 16);
    let (m, b) = (pj.mem_mb, 425.0);
    let tc = (m / 8.0 - m / 16.0) * 8.0 / (2.0 * b * 8f64.powf(2.0 / 3.0));
    assert!((expand - (tc + 8.0 * 0.01904 + 72.73)).abs() < 1e-9, "{expand}");
    // shrinking boots nothing
    let shrink = e.resize_cost(&pj, 16, 8);
    assert!(shrink > 0.0 && shrink < 72.73, "{shrink}");
    // a runtime that keeps processes on every node (the paper's Charm++ testbed)
    // pays the redistribution only
    let charm = tessera_core::power::ParmEngine::new(machine(64, 64.0 * 116.0), ParmConfig { expand_boots: false, ..ParmConfig::new(ParmVariant::WSE) });
    assert!((charm.resize_cost(&pj, 8, 16) - tc).abs() < 1e-9);
    assert_eq!(charm.resize_cost(&pj, 16, 8), shrink);
}

#[test]
fn the_resize_limit_counts_from_the_last_resize_not_the_start() {
    // the first job takes the machine at 0; the second arrives at 100, before f_se
    // (500) has passed since the first one's start: the first may shrink at once
    // (it was never resized), but not again before 600
    let jobs = vec![(0, job(PRESETS[0], 40_000.0, 2, 8)), (100, job(PRESETS[0], 4_000.0, 2, 8)), (300, job(PRESETS[0], 4_000.0, 2, 8))];
    let cfg = ParmConfig { alpha: 0.0, ..ParmConfig::new(ParmVariant::WSE) };
    let r = drive(machine(8, 8.0 * 116.0), cfg, &jobs);
    let first = &r.configs[0];
    assert_eq!(first[0].1, 8);
    let shrink = first.iter().find(|c| c.1 < 8).expect("the first job shrinks");
    assert_eq!(shrink.0, 100, "shrunk when the second job arrived: {first:?}");
    let mut n = shrink.1;
    for &(t, m, _) in first.iter().filter(|c| c.0 > 100) {
        if m != n {
            assert!(t >= 600, "resized again at {t}, within f_se of its resize at 100: {first:?}");
            n = m;
        }
    }
}

#[test]
fn a_decision_time_delays_what_the_decision_started() {
    let m = machine(8, 8.0 * 116.0);
    let mut e = Engine::parm(m, ParmConfig::new(ParmVariant::NoSE));
    let mut out = Vec::new();
    e.handle(0, Input::submit(JobSpec { power: Some(job(PRESETS[1], 1000.0, 2, 4)), ..JobSpec::new(JobId(1), 4, 100_000) }), &mut out);
    e.handle(0, Input::Pass, &mut out);
    let end = e.as_parm().unwrap().expected_end(JobIdx(0)).expect("the job runs");
    out.clear();
    e.handle(0, Input::DecisionTime { micros: 2_500_000 }, &mut out);
    let later = e.as_parm().unwrap().expected_end(JobIdx(0)).unwrap();
    assert!(later == end + 2 || later == end + 3, "2.5 s later: {end} -> {later}");
    assert!(matches!(out.as_slice(), [Effect::Configure { end, .. }, ..] if *end == later), "{out:?}");
    // charged once: a second report without a decision in between changes nothing
    out.clear();
    e.handle(0, Input::DecisionTime { micros: 2_500_000 }, &mut out);
    assert_eq!(e.as_parm().unwrap().expected_end(JobIdx(0)), Some(later));
    assert!(!out.iter().any(|x| matches!(x, Effect::Configure { .. })));
    // a machine of nodes has no decision time
    let mut n = Engine::new(tessera_core::PolicyKind::Easy, 4).unwrap();
    out.clear();
    n.handle(0, Input::DecisionTime { micros: 1 }, &mut out);
    assert!(matches!(out.as_slice(), [Effect::Rejected { .. }, ..]), "{out:?}");
}

#[test]
fn a_job_that_is_not_malleable_keeps_the_size_it_started_with() {
    // as `malleable_jobs_shrink_to_admit_new_ones`, the first job not malleable:
    // wSE may change its cap but never its size, so the second job waits
    let rigid = PowerJob { malleable: false, ..job(PRESETS[0], 40_000.0, 2, 8) };
    let jobs = vec![(0, rigid), (600, job(PRESETS[0], 4_000.0, 2, 8))];
    let r = drive(machine(8, 8.0 * 116.0), ParmConfig { alpha: 0.0, ..ParmConfig::new(ParmVariant::WSE) }, &jobs);
    assert!(r.configs[0].iter().all(|c| c.1 == 8), "never resized: {:?}", r.configs[0]);
    assert!(r.configs[1][0].0 > 600, "the second job waits for nodes");
}

#[test]
fn a_node_that_goes_down_kills_the_job_on_it_and_takes_no_more() {
    let mut e = Engine::parm(machine(4, 4.0 * 116.0), ParmConfig::new(ParmVariant::NoSE));
    let mut out = Vec::new();
    let rigid = |id, n| JobSpec { power: Some(job(PRESETS[1], 9_000.0, n, n)), ..JobSpec::new(JobId(id), n, 100_000) };
    e.handle(0, Input::submit(rigid(1, 2)), &mut out);
    e.handle(0, Input::Pass, &mut out);
    let nodes: Vec<u32> = e.allocation(JobId(1)).unwrap().parts.iter().map(|p| p.node).collect();
    assert_eq!(nodes, [0, 1], "the lowest free nodes");
    out.clear();
    e.handle(5, Input::Node { node: 1, change: tessera_core::NodeChange::Down, reason: "lost".into() }, &mut out);
    assert!(matches!(out.as_slice(), [Effect::Kill { job: JobId(1), reason: tessera_core::KillReason::NodeFailure }, ..]), "{out:?}");
    assert_eq!(e.node_status(1).map(|s| s.up), Some(false));
    // its nodes and power stay with it until its end is reported
    e.handle(5, Input::submit(rigid(2, 3)), &mut out);
    e.handle(5, Input::Pass, &mut out);
    assert!(e.allocation(JobId(2)).is_none(), "2 of 4 nodes are held by the ending job");
    out.clear();
    e.handle(6, Input::Complete { job: JobId(1), outcome: Outcome::Signaled(9) }, &mut out);
    assert!(out.iter().any(|x| matches!(x, Effect::Finished(r) if r.state == tessera_core::FinalState::NodeFail)), "{out:?}");
    e.handle(6, Input::Pass, &mut out);
    let nodes: Vec<u32> = e.allocation(JobId(2)).unwrap().parts.iter().map(|p| p.node).collect();
    assert_eq!(nodes, [0, 2, 3], "the down node takes no job");
    // a drained node takes none either, and a job too large for the nodes up waits
    e.handle(7, Input::submit(rigid(3, 1)), &mut out);
    e.handle(7, Input::Node { node: 0, change: tessera_core::NodeChange::Drain, reason: "maintenance".into() }, &mut out);
    e.handle(7, Input::Pass, &mut out);
    assert!(e.allocation(JobId(3)).is_none(), "node 1 is down, the others held");
    assert!(matches!(e.pending_reason(7, JobId(3)), Some(PendingReason::Resources { needed: 1, free: 0 })), "{:?}", e.pending_reason(7, JobId(3)));
    e.sanity_check();
}

#[test]
fn a_cluster_machine_names_the_clusters_nodes() {
    // the default partition's nodes, as the cluster file numbers them
    let m = PowerMachine { node_ids: vec![4, 5, 6, 7], node_cores: 16, ..machine(4, 4.0 * 116.0) };
    let mut e = Engine::parm(m, ParmConfig::new(ParmVariant::NoSE));
    let mut out = Vec::new();
    e.handle(0, Input::submit(JobSpec { power: Some(job(PRESETS[1], 9_000.0, 2, 2)), ..JobSpec::new(JobId(1), 2, 100_000) }), &mut out);
    e.handle(0, Input::Pass, &mut out);
    let a = e.allocation(JobId(1)).unwrap();
    assert_eq!(a.parts.iter().map(|p| (p.node, p.cores)).collect::<Vec<_>>(), [(4, 16), (5, 16)]);
    // a node outside the machine changes nothing; one of it is found by its cluster index
    out.clear();
    e.handle(1, Input::Node { node: 2, change: tessera_core::NodeChange::Down, reason: String::new() }, &mut out);
    assert!(out.is_empty(), "{out:?}");
    e.handle(1, Input::Node { node: 5, change: tessera_core::NodeChange::Down, reason: String::new() }, &mut out);
    assert!(matches!(out.as_slice(), [Effect::Kill { job: JobId(1), .. }, ..]), "{out:?}");
}

#[test]
fn a_shrunk_job_holds_the_nodes_it_gave_up_until_it_acknowledges_or_is_killed() {
    // as `malleable_jobs_shrink_to_admit_new_ones`, with acknowledgements: the
    // first job shrinks at 600, the second starts only once it has acknowledged
    let cfg = ParmConfig { alpha: 0.0, resize_ack_s: Some(30), ..ParmConfig::new(ParmVariant::WSE) };
    let mut e = Engine::parm(machine(8, 8.0 * 116.0), cfg.clone());
    let mut out = Vec::new();
    let spec = |id, pj: PowerJob| JobSpec { power: Some(pj), ..JobSpec::new(JobId(id), pj.n_max, 1_000_000) };
    e.handle(0, Input::submit(spec(1, job(PRESETS[0], 40_000.0, 2, 8))), &mut out);
    e.handle(0, Input::Pass, &mut out);
    assert_eq!(e.power_config(JobId(1)).unwrap().0, 8);
    out.clear();
    e.handle(600, Input::submit(spec(2, job(PRESETS[0], 4_000.0, 2, 8))), &mut out);
    e.handle(600, Input::Pass, &mut out);
    let (n, _) = e.power_config(JobId(1)).unwrap();
    assert!(n < 8, "the first job shrank: {out:?}");
    assert!(e.allocation(JobId(2)).is_none(), "the second waits for the nodes given up");
    assert_eq!(e.as_parm().unwrap().used_nodes(), 8, "the nodes given up are still held");
    assert!(out.iter().any(|x| matches!(x, Effect::WakeAt(630))), "the acknowledgement's deadline: {out:?}");
    e.sanity_check();
    // it acknowledges: the nodes are free, the next pass starts the second job
    out.clear();
    e.handle(605, Input::Resized(JobId(1)), &mut out);
    assert!(out.iter().all(|x| !matches!(x, Effect::Rejected { .. })), "{out:?}");
    e.handle(605, Input::Pass, &mut out);
    assert!(e.allocation(JobId(2)).is_some(), "{out:?}");
    // an acknowledgement of nothing is refused
    out.clear();
    e.handle(606, Input::Resized(JobId(1)), &mut out);
    assert!(matches!(out.as_slice(), [Effect::Rejected { .. }, ..]), "{out:?}");

    // the same without an acknowledgement: killed at the deadline
    let mut e = Engine::parm(machine(8, 8.0 * 116.0), cfg);
    e.handle(0, Input::submit(spec(1, job(PRESETS[0], 40_000.0, 2, 8))), &mut out);
    e.handle(0, Input::Pass, &mut out);
    e.handle(600, Input::submit(spec(2, job(PRESETS[0], 4_000.0, 2, 8))), &mut out);
    e.handle(600, Input::Pass, &mut out);
    out.clear();
    e.handle(629, Input::Pass, &mut out);
    assert!(!out.iter().any(|x| matches!(x, Effect::Kill { .. })), "not yet: {out:?}");
    e.handle(630, Input::Pass, &mut out);
    assert!(out.iter().any(|x| matches!(x, Effect::Kill { job: JobId(1), reason: tessera_core::KillReason::ResizeTimeout })), "{out:?}");
    out.clear();
    e.handle(631, Input::Pass, &mut out);
    assert!(!out.iter().any(|x| matches!(x, Effect::WakeAt(_) | Effect::Kill { .. })), "killed once, no more wake-ups: {out:?}");
    e.handle(632, Input::Complete { job: JobId(1), outcome: Outcome::Signaled(15) }, &mut out);
    e.handle(632, Input::Pass, &mut out);
    assert_eq!(e.power_config(JobId(2)).map(|c| c.0), Some(8), "the whole machine is free again");
    e.sanity_check();
}

#[test]
fn a_lowered_budget_brings_caps_down_at_the_next_pass_and_one_too_low_is_refused() {
    let mut e = Engine::parm(machine(8, 8.0 * 116.0), ParmConfig::new(ParmVariant::NoSE));
    let mut out = Vec::new();
    let rigid = PowerJob { malleable: false, ..job(PRESETS[0], 90_000.0, 8, 8) };
    e.handle(0, Input::submit(JobSpec { power: Some(rigid), ..JobSpec::new(JobId(1), 8, 1_000_000) }), &mut out);
    e.handle(0, Input::Pass, &mut out);
    assert_eq!(e.power_config(JobId(1)), Some((8, 60.0)), "full power while the budget allows");
    // 8 nodes at LeanMD's lowest cap (30 W) draw 688 W: a budget below is refused
    out.clear();
    e.handle(10, Input::SetBudget { watts: 600.0 }, &mut out);
    assert!(matches!(out.as_slice(), [Effect::Rejected { reason: tessera_core::Rejection::BudgetTooLow { budget_w: 600, needed_w: 688 }, .. }, ..]), "{out:?}");
    assert_eq!(e.as_parm().unwrap().machine().budget_w, 928.0, "unchanged");
    // 700 W: accepted, and the pass at the same instant brings the cap down
    out.clear();
    e.handle(10, Input::SetBudget { watts: 700.0 }, &mut out);
    assert!(!out.iter().any(|x| matches!(x, Effect::Rejected { .. })), "{out:?}");
    e.handle(10, Input::Pass, &mut out);
    let (n, cap) = e.power_config(JobId(1)).unwrap();
    assert_eq!(n, 8);
    assert!(8.0 * (cap + 56.0) <= 700.0, "{cap} W");
    assert!(out.iter().any(|x| matches!(x, Effect::Configure { job: JobId(1), cap_w, .. } if *cap_w == cap)), "{out:?}");
    assert!(e.as_parm().unwrap().power_w() <= 700.0);
    e.sanity_check();
    // a queue engine allocates no power
    let mut q = Engine::new(tessera_core::PolicyKind::Easy, 4).unwrap();
    out.clear();
    q.handle(0, Input::SetBudget { watts: 100.0 }, &mut out);
    assert!(matches!(out.as_slice(), [Effect::Rejected { reason: tessera_core::Rejection::Unsupported { .. }, .. }, ..]), "{out:?}");
}

/// wSE with acknowledged resizes, on the seeded workloads: each shrunk job
/// acknowledges after a seeded delay, past the deadline for some (they are
/// killed). The power stays within the budget after every input, the nodes a
/// shrink gave up are never given to another job before the acknowledgement,
/// and every job leaves the engine.
#[test]
fn acknowledged_resizes_keep_the_budget_and_every_job_ends() {
    use std::collections::BTreeMap;
    let (mut all_acked, mut all_killed) = (0, 0);
    for seed in 0..4u64 {
        let jobs = workload(seed);
        let cfg = ParmConfig { resize_ack_s: Some(30), fse: 200, ..ParmConfig::new(ParmVariant::WSE) };
        let m = machine(24, 10.0 * 116.0);
        let budget = m.budget_w;
        let mut e = Engine::parm(m, cfg);
        let (mut ends, mut acks, mut wake): (Vec<Option<Time>>, BTreeMap<Time, Vec<u64>>, Option<Time>) = (Vec::new(), BTreeMap::new(), None);
        let (mut next, mut left, mut killed) = (0usize, 0usize, 0usize);
        let mut rng = seed.wrapping_mul(0x2545_f491_4f6c_dd1d) | 1;
        let mut delay = move || {
            rng ^= rng << 13;
            rng ^= rng >> 7;
            rng ^= rng << 17;
            (rng % 40) as Time
        };
        let mut out = Vec::new();
        let mut steps = 0;
        loop {
            steps += 1;
            assert!(steps < 100_000, "seed {seed}: no progress");
            let now = [jobs.get(next).map(|j| j.0), ends.iter().flatten().copied().min(), acks.keys().next().copied(), wake].into_iter().flatten().min();
            let Some(now) = now else { break };
            let mut inputs = Vec::new();
            for (i, end) in ends.iter_mut().enumerate() {
                if *end == Some(now) {
                    *end = None;
                    inputs.push(Input::Complete { job: JobId(i as u64), outcome: Outcome::Exited(0) });
                }
            }
            for id in acks.remove(&now).unwrap_or_default() {
                if e.awaits_resize(JobId(id)) {
                    inputs.push(Input::Resized(JobId(id)));
                    all_acked += 1;
                }
            }
            while let Some(&(_, pj)) = jobs.get(next).filter(|j| j.0 == now) {
                ends.push(None);
                inputs.push(Input::submit(JobSpec { power: Some(pj), ..JobSpec::new(JobId(next as u64), pj.n_max, 1_000_000) }));
                next += 1;
            }
            if wake.is_some_and(|w| w <= now) {
                wake = None;
            }
            inputs.push(Input::Pass);
            for input in inputs {
                let awaited: Vec<bool> = (0..ends.len()).map(|i| e.awaits_resize(JobId(i as u64))).collect();
                out.clear();
                e.handle(now, input, &mut out);
                for eff in out.drain(..).collect::<Vec<_>>() {
                    match eff {
                        Effect::Configure { job, end, .. } => {
                            ends[job.0 as usize] = Some(end);
                            if e.awaits_resize(job) && !awaited[job.0 as usize] {
                                acks.entry(now + delay()).or_default().push(job.0);
                            }
                        }
                        Effect::Kill { job, reason } => {
                            assert_eq!(reason, tessera_core::KillReason::ResizeTimeout);
                            killed += 1;
                            ends[job.0 as usize] = None;
                            let mut fx = Vec::new();
                            e.handle(now, Input::Complete { job, outcome: Outcome::Signaled(15) }, &mut fx);
                            left += fx.iter().filter(|x| matches!(x, Effect::Finished(_))).count();
                        }
                        Effect::Finished(_) => left += 1,
                        Effect::WakeAt(t) => wake = Some(t),
                        Effect::Start { .. } => {}
                        other => panic!("seed {seed}: unexpected {other:?}"),
                    }
                }
                let p = e.as_parm().unwrap();
                assert!(p.power_w() <= budget + 1e-6, "seed {seed} at {now}: {} W over {budget} W", p.power_w());
                e.sanity_check();
            }
        }
        assert_eq!(left, jobs.len(), "seed {seed}: every job ended ({killed} killed at the deadline)");
        all_killed += killed;
    }
    assert!(all_acked > 0 && all_killed > 0, "both paths taken: {all_acked} acknowledged, {all_killed} killed");
}

/// PARM decides again at every end a job was told, including one a later
/// reconfiguration moved: the engine asks to be woken then, so a live
/// controller decides when the simulator's run loop does.
#[test]
fn an_end_a_reconfiguration_moved_still_wakes_the_engine() {
    let mut e = Engine::parm(machine(12, 8.0 * 116.0), ParmConfig { fse: 0, ..ParmConfig::new(ParmVariant::WSE) });
    let mut out = Vec::new();
    let a = job(PRESETS[0], 1000.0, 2, 8);
    e.handle(0, Input::submit(JobSpec { power: Some(a), ..JobSpec::new(JobId(1), 8, 1_000_000) }), &mut out);
    e.handle(0, Input::Pass, &mut out);
    let first = out.iter().find_map(|x| if let Effect::Configure { end, .. } = x { Some(*end) } else { None }).expect("job 1 started");
    // a second job takes power from the first, whose end moves later
    out.clear();
    e.handle(10, Input::submit(JobSpec { power: Some(job(PRESETS[1], 1000.0, 1, 1)), ..JobSpec::new(JobId(2), 1, 1_000_000) }), &mut out);
    e.handle(10, Input::Pass, &mut out);
    let moved = out.iter().find_map(|x| match x { Effect::Configure { job: JobId(1), end, .. } => Some(*end), _ => None }).unwrap_or_else(|| panic!("job 1 was resized: {out:?}"));
    assert!(moved > first, "job 1 ends later on fewer nodes: {first} then {moved}");
    let wakes: Vec<Time> = out.iter().filter_map(|x| if let Effect::WakeAt(t) = x { Some(*t) } else { None }).collect();
    assert_eq!(wakes.last(), Some(&first), "the engine wakes at job 1's first end: {out:?}");
    // there it decides, and then waits for the ends it holds now
    out.clear();
    e.handle(first, Input::Pass, &mut out);
    assert!(!out.iter().any(|x| matches!(x, Effect::WakeAt(t) if *t <= first)), "{out:?}");
}

/// The power governor's cut (`Input::CapCeiling`): a running job is re-capped
/// at once and its end moves later; PARM's later decisions keep it at or
/// under the ceiling; and it never goes below the job's floor.
#[test]
fn a_cap_ceiling_holds_a_job_under_it_for_the_rest_of_its_run() {
    let mut e = Engine::parm(machine(8, 8.0 * 116.0), ParmConfig::new(ParmVariant::WSE));
    let mut out = Vec::new();
    // Lulesh: p_l 32 W, so its floor is the 33 W level
    let a = job(PRESETS[2], 1000.0, 4, 4);
    e.handle(0, Input::submit(JobSpec { power: Some(a), ..JobSpec::new(JobId(1), 4, 1_000_000) }), &mut out);
    e.handle(0, Input::Pass, &mut out);
    let (_, p0) = e.power_config(JobId(1)).unwrap();
    let end0 = e.power_end(JobId(1)).unwrap();
    assert_eq!(e.cap_floor(JobId(1)), Some(33.0));
    out.clear();
    e.handle(100, Input::CapCeiling { job: JobId(1), cap_w: 40.0 }, &mut out);
    let (_, p1) = e.power_config(JobId(1)).unwrap();
    assert!(p1 <= 40.0 && p1 < p0, "re-capped from {p0} W to {p1} W");
    assert!(out.iter().any(|x| matches!(x, Effect::Configure { job: JobId(1), cap_w, end, .. } if *cap_w == p1 && *end > end0)), "{out:?}");
    // later decisions keep it there, whatever else happens
    e.handle(200, Input::submit(JobSpec { power: Some(job(PRESETS[0], 10.0, 1, 1)), ..JobSpec::new(JobId(2), 1, 1_000_000) }), &mut out);
    e.handle(200, Input::Pass, &mut out);
    assert!(e.power_config(JobId(1)).unwrap().1 <= 40.0);
    // a ceiling below its floor holds it at its floor
    e.handle(300, Input::CapCeiling { job: JobId(1), cap_w: 1.0 }, &mut out);
    assert_eq!(e.power_config(JobId(1)).unwrap().1, 33.0);
    e.sanity_check();
}

#[test]
fn a_node_whose_power_domain_failed_counts_at_its_maximum_under_parm() {
    let mut e = Engine::parm(machine(8, 8.0 * 116.0), ParmConfig::new(ParmVariant::WSE));
    let before = e.as_parm().unwrap().power_w();
    let mut out = Vec::new();
    e.handle(0, Input::Node { node: 7, change: tessera_core::NodeChange::PowerFault, reason: "power: unreadable".into() }, &mut out);
    // the machine's highest level (60 W) plus 56 W, over its idle 0 W
    assert_eq!(e.as_parm().unwrap().power_w() - before, 116.0);
    // a job of all the other 7 nodes fits only below full power
    e.handle(0, Input::submit(JobSpec { power: Some(job(PRESETS[0], 100.0, 7, 7)), ..JobSpec::new(JobId(1), 7, 1_000_000) }), &mut out);
    e.handle(0, Input::Pass, &mut out);
    assert!(e.as_parm().unwrap().power_w() <= 8.0 * 116.0 + 1e-6);
    e.sanity_check();
}

/// A power fault under a running job can put the machine over its budget
/// (the node counts at its maximum): the next pass lowers caps to meet it.
#[test]
fn a_power_fault_under_a_running_job_brings_caps_down_at_the_next_pass() {
    let mut e = Engine::parm(machine(8, 8.0 * 86.0 + 10.0), ParmConfig::new(ParmVariant::WSE));
    let mut out = Vec::new();
    e.handle(0, Input::submit(JobSpec { power: Some(job(PRESETS[0], 1000.0, 8, 8)), ..JobSpec::new(JobId(1), 8, 1_000_000) }), &mut out);
    e.handle(0, Input::Pass, &mut out);
    assert_eq!(e.power_config(JobId(1)), Some((8, 30.0)), "8 nodes at the lowest cap fill the budget");
    e.handle(5, Input::Node { node: 0, change: tessera_core::NodeChange::PowerFault, reason: "power: unreadable".into() }, &mut out);
    let p = e.as_parm().unwrap();
    assert!(p.power_w() > 8.0 * 86.0 + 10.0, "the faulted node counts at 116 W: {}", p.power_w());
    e.sanity_check();
    e.handle(5, Input::Pass, &mut out);
    e.sanity_check();
}
