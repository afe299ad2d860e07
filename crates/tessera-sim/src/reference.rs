//! A naive reference simulator, written straight from the policy definitions in
//! `docs/semantics.md` with plain vectors and full rescans at every pass.
//!
//! It shares nothing with the engine but the job semantics, and serves two
//! purposes: an oracle for differential tests (the engine must produce exactly the
//! same schedule), and the "naive implementation" that benchmarks compare against.
//! It is the way most simulators work: every pass walks the whole queue.

use crate::run::SimOutcome;
use crate::workload::Workload;
use tessera_core::{PolicyKind, Time};

struct Run {
    expected_end: Time,
    actual_end: Time,
    procs: u32,
    job: usize,
}

/// Replay `w` under `policy` with the naive algorithms.
///
/// Queue policies only: PARM is checked against its MILP formulation instead.
pub fn simulate_reference(w: &Workload, policy: PolicyKind) -> SimOutcome {
    assert!(policy != PolicyKind::Parm, "the reference simulator has no PARM");
    let n = w.jobs.len();
    let mut start = vec![Time::MIN; n];
    let mut end = vec![Time::MIN; n];
    let mut queue: Vec<usize> = Vec::new();
    let mut running: Vec<Run> = Vec::new();
    let mut free = w.capacity;
    let mut next = 0;
    let (mut passes, mut max_queue) = (0u64, 0usize);
    loop {
        let t_arr = w.jobs.get(next).map(|j| j.submit);
        let t_end = running.iter().map(|r| r.actual_end).min();
        let now = match (t_arr, t_end) {
            (None, None) => break,
            (a, e) => a.into_iter().chain(e).min().unwrap(),
        };
        let mut completed = complete(now, &mut running, &mut free, &mut end);
        let _ = completed;
        while next < n && w.jobs[next].submit == now {
            queue.push(next);
            next += 1;
        }
        loop {
            max_queue = max_queue.max(queue.len());
            passes += 1;
            let started = match policy {
                PolicyKind::Fcfs => pass_fcfs(w, &mut queue, free),
                PolicyKind::Easy => pass_easy(now, w, &mut queue, &running, free),
                PolicyKind::Conservative => pass_conservative(now, w, &mut queue, &running, free),
                PolicyKind::Parm => unreachable!("checked on entry"),
            };
            for j in started {
                let job = &w.jobs[j];
                start[j] = now;
                free -= job.procs;
                running.push(Run {
                    expected_end: now + job.estimate,
                    actual_end: now + job.effective_runtime(),
                    procs: job.procs,
                    job: j,
                });
            }
            completed = complete(now, &mut running, &mut free, &mut end);
            if !completed {
                break;
            }
        }
    }
    SimOutcome { start, end, suspended: Vec::new(), released: Default::default(), factor: Vec::new(), alloc: Default::default(), dropped_nodesets: 0, passes, max_queue, power: None, rejected: 0 }
}

fn complete(now: Time, running: &mut Vec<Run>, free: &mut u32, end: &mut [Time]) -> bool {
    let before = running.len();
    running.retain(|r| {
        if r.actual_end == now {
            *free += r.procs;
            end[r.job] = now;
            false
        } else {
            true
        }
    });
    running.len() != before
}

/// Start from the head while jobs fit; returns the started jobs and the free count.
fn take_head(w: &Workload, queue: &mut Vec<usize>, mut free: u32) -> (Vec<usize>, u32) {
    let mut started = Vec::new();
    while let Some(&j) = queue.first() {
        if w.jobs[j].procs > free {
            break;
        }
        free -= w.jobs[j].procs;
        started.push(queue.remove(0));
    }
    (started, free)
}

fn pass_fcfs(w: &Workload, queue: &mut Vec<usize>, free: u32) -> Vec<usize> {
    take_head(w, queue, free).0
}

fn pass_easy(now: Time, w: &Workload, queue: &mut Vec<usize>, running: &[Run], free: u32) -> Vec<usize> {
    let (mut started, mut free) = take_head(w, queue, free);
    let Some(&head) = queue.first() else { return started };
    // expected ends of everything running, including the jobs just started
    let mut ends: Vec<(Time, u32)> = running.iter().map(|r| (r.expected_end, r.procs)).collect();
    ends.extend(started.iter().map(|&j| (now + w.jobs[j].estimate, w.jobs[j].procs)));
    ends.sort();
    let need = w.jobs[head].procs;
    let mut avail = free;
    let mut shadow = None;
    for &(t, p) in &ends {
        avail += p;
        if avail >= need {
            shadow = Some(t);
            break;
        }
    }
    let shadow = shadow.expect("the head fits once everything has ended");
    let at_shadow = free + ends.iter().filter(|e| e.0 <= shadow).map(|e| e.1).sum::<u32>();
    let mut extra = at_shadow - need;
    let mut i = 1;
    while i < queue.len() {
        let j = &w.jobs[queue[i]];
        let ends_by_shadow = now + j.estimate <= shadow;
        if j.procs <= free && (ends_by_shadow || j.procs <= extra) {
            if !ends_by_shadow {
                extra -= j.procs;
            }
            free -= j.procs;
            started.push(queue.remove(i));
        } else {
            i += 1;
        }
    }
    started
}

/// Occupied processors over [from, to): running jobs and reservations.
struct Busy {
    from: Time,
    to: Time,
    procs: u32,
}

fn pass_conservative(now: Time, w: &Workload, queue: &mut Vec<usize>, running: &[Run], free: u32) -> Vec<usize> {
    let capacity = w.capacity;
    debug_assert_eq!(capacity - running.iter().map(|r| r.procs).sum::<u32>(), free);
    // a job holds its processors at least for the instant it starts
    let mut busy: Vec<Busy> =
        running.iter().map(|r| Busy { from: now, to: r.expected_end.max(now + 1), procs: r.procs }).collect();
    let mut started = Vec::new();
    for &j in queue.iter() {
        let job = &w.jobs[j];
        let dur = job.estimate.max(1);
        // candidate starts: now and every end of an occupation
        let mut candidates: Vec<Time> = busy.iter().map(|b| b.to).filter(|&t| t > now).collect();
        candidates.push(now);
        candidates.sort();
        candidates.dedup();
        let used_at = |t: Time, busy: &[Busy]| -> u32 {
            busy.iter().filter(|b| b.from <= t && t < b.to).map(|b| b.procs).sum()
        };
        let fits = |s: Time| -> bool {
            // free processors only change where an occupation starts
            std::iter::once(s)
                .chain(busy.iter().map(|b| b.from).filter(|&t| t > s && t < s + dur))
                .all(|t| capacity - used_at(t, &busy) >= job.procs)
        };
        let s = candidates.into_iter().find(|&s| fits(s)).expect("fits after everything ends");
        busy.push(Busy { from: s, to: s + dur, procs: job.procs });
        if s == now {
            started.push(j);
        }
    }
    queue.retain(|j| !started.contains(j));
    started
}
