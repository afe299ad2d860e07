//! The event loop.

use crate::workload::{spec_of, Machine, Workload};
use std::cmp::Reverse;
use std::collections::BinaryHeap;
use tessera_core::{scaled, Allocation, Effect, Engine, Input, JobIdx, JobSpec, PolicyKind, Time};

/// Start and end of every job of a [`Workload`], by index, plus loop statistics.
#[derive(Clone, Debug, PartialEq)]
pub struct SimOutcome {
    pub start: Vec<Time>,
    pub end: Vec<Time>,
    /// The pace of each job: the scaling factor of its slowest node (1 in a pool).
    pub factor: Vec<f64>,
    /// Where each job ran (cluster runs only).
    pub alloc: Vec<Option<Allocation>>,
    /// Jobs whose node set no set could ever satisfy, which ran without it.
    pub dropped_nodesets: u64,
    /// Scheduling passes run.
    pub passes: u64,
    /// Longest queue seen at a pass.
    pub max_queue: usize,
}

/// Replay `w` under `policy`.
pub fn simulate(w: &Workload, policy: PolicyKind) -> SimOutcome {
    simulate_observed(w, policy, |_, _| {})
}

/// Replay `w` under `policy`, calling `observe(engine, now)` after every pass (tests
/// use it to check invariants and reservations as the schedule unfolds).
pub fn simulate_observed(w: &Workload, policy: PolicyKind, mut observe: impl FnMut(&mut Engine, Time)) -> SimOutcome {
    let n = w.jobs.len();
    let (mut engine, partition) = match &w.machine {
        Machine::Pool(c) => (Engine::new(policy, *c), None),
        Machine::Cluster { cluster, partition, .. } => (Engine::with_cluster(policy, cluster), *partition),
    };
    let nodeset = match &w.machine {
        Machine::Cluster { nodeset: Some(spec), .. } => Some(engine.register_nodeset(spec.clone())),
        _ => None,
    };
    let clustered = matches!(w.machine, Machine::Cluster { .. });
    let mut start = vec![Time::MIN; n];
    let mut end = vec![Time::MIN; n];
    let mut factor = vec![1.0; n];
    let mut alloc: Vec<Option<Allocation>> = if clustered { vec![None; n] } else { Vec::new() };
    let mut completions: BinaryHeap<Reverse<(Time, u32)>> = BinaryHeap::with_capacity(1024);
    let mut effects: Vec<Effect> = Vec::with_capacity(64);
    let mut next = 0usize;
    let mut passes = 0u64;
    let mut max_queue = 0usize;
    loop {
        let t_arrival = w.jobs.get(next).map(|j| j.submit);
        let t_completion = completions.peek().map(|r| r.0 .0);
        let now = match (t_arrival, t_completion) {
            (None, None) => break,
            (Some(a), None) => a,
            (None, Some(c)) => c,
            (Some(a), Some(c)) => a.min(c),
        };
        complete_due(now, &mut completions, &mut engine, &mut end, &mut effects);
        while let Some(j) = w.jobs.get(next).filter(|j| j.submit == now) {
            let spec = JobSpec { partition, nodeset, ..spec_of(j) };
            engine.handle(now, Input::Submit(spec), &mut effects);
            next += 1;
        }
        loop {
            max_queue = max_queue.max(engine.queued());
            engine.handle(now, Input::Pass, &mut effects);
            passes += 1;
            observe(&mut engine, now);
            for e in effects.drain(..) {
                match e {
                    Effect::Start { job, .. } => {
                        let i = job.index();
                        start[i] = now;
                        let f = engine.factor(job);
                        factor[i] = f;
                        if clustered {
                            alloc[i] = engine.allocation(job).cloned();
                        }
                        // reference seconds run at the pace of the slowest node
                        completions.push(Reverse((now + scaled(w.jobs[i].effective_runtime(), f), job.0)));
                    }
                }
            }
            // zero-length jobs end at this same instant: one more round
            if !complete_due(now, &mut completions, &mut engine, &mut end, &mut effects) {
                break;
            }
        }
    }
    debug_assert!(start.iter().all(|&s| s != Time::MIN), "a job never started");
    let dropped_nodesets = engine.dropped_nodesets();
    SimOutcome { start, end, factor, alloc, dropped_nodesets, passes, max_queue }
}

/// Deliver every completion due at `now`; returns whether there was any.
fn complete_due(
    now: Time,
    completions: &mut BinaryHeap<Reverse<(Time, u32)>>,
    engine: &mut Engine,
    end: &mut [Time],
    effects: &mut Vec<Effect>,
) -> bool {
    let mut any = false;
    while let Some(&Reverse((t, j))) = completions.peek() {
        if t != now {
            break;
        }
        completions.pop();
        engine.handle(now, Input::Complete(JobIdx(j)), effects);
        end[j as usize] = now;
        any = true;
    }
    any
}
