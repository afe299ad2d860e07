//! The event loop.

use crate::workload::Workload;
use std::cmp::Reverse;
use std::collections::BinaryHeap;
use tessera_core::{Effect, Engine, Input, JobId, JobIdx, JobSpec, PolicyKind, Time};

/// Start and end of every job of a [`Workload`], by index, plus loop statistics.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SimOutcome {
    pub start: Vec<Time>,
    pub end: Vec<Time>,
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
pub fn simulate_observed(w: &Workload, policy: PolicyKind, mut observe: impl FnMut(&Engine, Time)) -> SimOutcome {
    let n = w.jobs.len();
    let mut engine = Engine::new(policy, w.capacity);
    let mut start = vec![Time::MIN; n];
    let mut end = vec![Time::MIN; n];
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
            let spec = JobSpec { id: JobId(j.id as u64), procs: j.procs, estimate: j.estimate };
            engine.handle(now, Input::Submit(spec), &mut effects);
            next += 1;
        }
        loop {
            max_queue = max_queue.max(engine.queued());
            engine.handle(now, Input::Pass, &mut effects);
            passes += 1;
            observe(&engine, now);
            for e in effects.drain(..) {
                match e {
                    Effect::Start { job, .. } => {
                        let i = job.index();
                        start[i] = now;
                        completions.push(Reverse((now + w.jobs[i].effective_runtime(), job.0)));
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
    SimOutcome { start, end, passes, max_queue }
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
