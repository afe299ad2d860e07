//! The event loop.

use crate::power::{PowerMode, PowerSetup};
use crate::workload::{queue_key, Machine, TimeRange, Workload};
use std::borrow::Cow;
use std::cmp::Reverse;
use std::collections::BinaryHeap;
use tessera_core::power::ParmStats;
use tessera_core::{scaled, step, After, AfterKind, AllocPart, Driver, Effect, Engine, Input, JobId, Outcome, PolicyKind, Time};
use tessera_workload::jobs::TraceJob;

/// Start and end of every job of a [`Workload`], by index, plus loop statistics.
#[derive(Clone, Debug, PartialEq)]
pub struct SimOutcome {
    pub start: Vec<Time>,
    pub end: Vec<Time>,
    /// Seconds each job spent suspended between its start and its end (preempted
    /// by a higher tier, or waiting for its gang time slice); empty when no job
    /// was ever suspended (read it with [`SimOutcome::suspended_of`]).
    pub suspended: Vec<Time>,
    /// By job index, the intervals [from, to) in which a suspended job had
    /// given its cores back (every suspension in a simulation is a preemption
    /// or a gang slice; only jobs ever suspended are listed).
    pub released: std::collections::BTreeMap<u32, Vec<(Time, Time)>>,
    /// The pace of each job: the scaling factor of its slowest node (1 in a
    /// pool); empty when every job ran at pace 1 (read it with
    /// [`SimOutcome::factor_of`]).
    pub factor: Vec<f64>,
    /// Where each job ran (cluster runs only).
    pub alloc: Placements,
    /// Jobs whose node set no set could ever satisfy, which ran without it.
    pub dropped_nodesets: u64,
    /// Scheduling passes run.
    pub passes: u64,
    /// Longest queue seen at a pass.
    pub max_queue: usize,
    /// Power-aware machines: power and energy.
    pub power: Option<PowerOutcome>,
    /// Inputs the engine rejected (0 unless the simulator has a bug).
    pub rejected: u64,
}

impl SimOutcome {
    /// The pace job `i` ran at.
    pub fn factor_of(&self, i: usize) -> f64 {
        self.factor.get(i).copied().unwrap_or(1.0)
    }

    /// Seconds job `i` spent suspended.
    pub fn suspended_of(&self, i: usize) -> Time {
        self.suspended.get(i).copied().unwrap_or(0)
    }
}

/// `v[i] = x` in a vector of `n` jobs' values kept empty while every one is
/// `usual` (a pace of 1, no second suspended).
fn set_sparse<T: Copy + PartialEq>(v: &mut Vec<T>, n: usize, i: usize, x: T, usual: T) {
    if x != usual && v.is_empty() {
        *v = vec![usual; n];
    }
    if let Some(slot) = v.get_mut(i) {
        *slot = x;
    }
}

/// Where each job ran, for millions of jobs in a few vectors. Parts are kept
/// as runs of consecutive nodes with the same cores when their memory and GPUs
/// follow the job's rule (memory per core and GPUs per node, taken from its
/// first part), as nearly every part does; a job with a part that does not
/// keeps all its parts whole. First fit lays a job on consecutive nodes: on
/// Curie's shape 14.9 million parts make 2.8 million runs.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Placements {
    at: Vec<Slot>,
    /// The runs of the parts that follow their job's rule.
    short: Vec<Run>,
    /// The parts of the jobs with one that does not.
    whole: Vec<AllocPart>,
}

/// `count` parts on nodes `node`, `node + 1`, ... with `cores` each.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Run {
    node: u32,
    cores: u32,
    count: u32,
}

/// A job's parts: `len` runs from `from` in `short` (memory `mem_per_core`
/// per core, `gpus` on each), or `len` parts in `whole` where `mem_per_core`
/// is [`WHOLE`].
#[derive(Clone, Copy, Debug, Default, PartialEq)]
struct Slot {
    from: u64,
    mem_per_core: u64,
    len: u32,
    gpus: u32,
}

const WHOLE: u64 = u64::MAX;

impl Placements {
    fn sized(n: usize) -> Self {
        Placements { at: vec![Slot::default(); n], ..Default::default() }
    }

    /// Where job `i` ran last (a requeued job's earlier parts stay behind,
    /// unreferenced).
    fn set(&mut self, i: usize, parts: &[AllocPart]) {
        let Some(first) = parts.first() else {
            self.at[i] = Slot::default();
            return;
        };
        let (mpc, gpus) = (if first.cores > 0 { first.mem / first.cores as u64 } else { 0 }, first.gpus);
        let follows = |p: &AllocPart| p.gpus == gpus && (p.cores as u64).checked_mul(mpc) == Some(p.mem);
        // the runs are laid down as the parts are checked, and taken back if
        // one does not follow the rule
        let from = self.short.len();
        let mut short = mpc != WHOLE;
        // the run being laid down, pushed when the next part does not extend it
        let mut run = Run { node: first.node, cores: first.cores, count: 0 };
        for p in parts {
            short = short && follows(p);
            if !short {
                break;
            }
            if run.cores == p.cores && run.node.checked_add(run.count) == Some(p.node) && run.count < u32::MAX {
                run.count += 1;
            } else {
                self.short.push(run);
                run = Run { node: p.node, cores: p.cores, count: 1 };
            }
        }
        if short {
            self.short.push(run);
        }
        self.at[i] = if short {
            Slot { from: from as u64, mem_per_core: mpc, len: (self.short.len() - from) as u32, gpus }
        } else {
            self.short.truncate(from);
            let from = self.whole.len() as u64;
            self.whole.extend_from_slice(parts);
            Slot { from, mem_per_core: WHOLE, len: parts.len() as u32, gpus: 0 }
        };
    }

    /// Where job `i` ran: None for a job not placed on nodes.
    pub fn get(&self, i: usize) -> Option<Parts<'_>> {
        let s = *self.at.get(i)?;
        let range = s.from as usize..s.from as usize + s.len as usize;
        (s.len > 0).then(|| {
            if s.mem_per_core == WHOLE {
                Parts::Whole(self.whole[range].iter())
            } else {
                Parts::Short { runs: self.short[range].iter(), at: None, mem_per_core: s.mem_per_core, gpus: s.gpus }
            }
        })
    }

    /// Jobs in index order, as [`Placements::get`].
    pub fn iter(&self) -> impl Iterator<Item = Option<Parts<'_>>> + '_ {
        (0..self.at.len()).map(|i| self.get(i))
    }
}

/// The parts of one job's placement ([`Placements::get`]).
#[derive(Clone, Debug)]
pub enum Parts<'a> {
    /// Runs yet to give, and what is left of the run being given.
    Short { runs: std::slice::Iter<'a, Run>, at: Option<Run>, mem_per_core: u64, gpus: u32 },
    Whole(std::slice::Iter<'a, AllocPart>),
}

impl Iterator for Parts<'_> {
    type Item = AllocPart;
    fn next(&mut self) -> Option<AllocPart> {
        match self {
            Parts::Short { runs, at, mem_per_core, gpus } => {
                let r = match at.take() {
                    Some(r) => r,
                    None => *runs.next()?,
                };
                if r.count > 1 {
                    *at = Some(Run { node: r.node + 1, count: r.count - 1, ..r });
                }
                Some(AllocPart { node: r.node, cores: r.cores, mem: r.cores as u64 * *mem_per_core, gpus: *gpus })
            }
            Parts::Whole(parts) => parts.next().copied(),
        }
    }
}

/// Replay `w` under `policy`.
pub fn simulate(w: &Workload, policy: PolicyKind) -> SimOutcome {
    simulate_observed(w, policy, |_, _| {})
}

/// The machine from `t` on: power drawn, busy nodes, and the CPU caps of the
/// busy nodes (node-weighted mean, lowest, highest; None with no node busy).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PowerSample {
    pub t: Time,
    pub power_w: f64,
    pub busy_nodes: u32,
    pub caps_w: Option<(f64, f64, f64)>,
}

/// What a power-aware run adds: power drawn over time, energy, usage.
#[derive(Clone, Debug, PartialEq)]
pub struct PowerOutcome {
    pub budget_w: f64,
    /// The highest power drawn at any instant.
    pub max_power_w: f64,
    /// ∫ power dt from the first submission to the last end (J).
    pub energy_j: f64,
    /// Energy drawn by each job's nodes, by index (J).
    pub job_energy_j: Vec<f64>,
    /// Σ nodes × seconds held, by index.
    pub job_node_s: Vec<f64>,
    /// Nodes each job started on.
    pub start_nodes: Vec<u32>,
    /// Power drawn from each instant on: one row per change.
    pub timeline: Vec<PowerSample>,
    /// PARM only: decision statistics and the wall time spent deciding.
    pub parm: Option<ParmStats>,
    pub decision_wall_s: f64,
    pub max_decision_wall_s: f64,
}

/// Replay `w` under `policy`, calling `observe(engine, now)` after every pass (tests
/// use it to check invariants and reservations as the schedule unfolds).
///
/// Job `i` of the workload is submitted as `JobId(i)`. The engine enforces time
/// limits: a job runs its trace runtime unless the engine kills it at its limit
/// first, and a killed job's processes die at once.
///
/// On a power-aware machine ([`Machine::Power`]) `policy` must be
/// [`PolicyKind::Parm`] exactly when the machine's mode is PARM; elsewhere it must
/// not be PARM (callers check: the CLI refuses the combination with a message).
pub fn simulate_observed(w: &Workload, policy: PolicyKind, observe: impl FnMut(&Engine, Time)) -> SimOutcome {
    replay(w, Jobs { list: &mut Cow::Borrowed(&w.jobs), feed: None }, policy, observe)
}

/// What a reader hands [`simulate_fed`] as it reads a trace: jobs in queue
/// order with their records' indices ([`crate::workload::queue_key`]), or
/// that reading failed (the reader reports why).
#[derive(Debug)]
pub enum Fed {
    Jobs(Vec<(TraceJob, u32)>),
    Failed,
}

/// Why [`simulate_fed`] stopped before the end.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Halt {
    /// A job came out of queue order: the jobs must be sorted first.
    Unsorted,
    /// The jobs read could take the clock past 2^42 s
    /// ([`Workload::check_time_range`] says by how much).
    BeyondTimeRange,
    /// The reader failed.
    Failed,
}

/// A replay of jobs fed as they are read, and every job fed.
#[derive(Debug)]
pub struct Fedout {
    /// The replay, unless it halted.
    pub outcome: Result<SimOutcome, Halt>,
    /// Every job fed, in the order fed, and its record's index (all of them,
    /// halted or not, unless the reader failed).
    pub jobs: Vec<TraceJob>,
    pub record_index: Vec<u32>,
    /// Seconds the replay waited for the reader.
    pub waited_s: f64,
}

/// Replay jobs on `machine` (a pool or a cluster; no accounts or
/// reservations) as `feed` hands them over, so that reading and simulating
/// overlap. The schedule is the one [`simulate`] gives for the same jobs in a
/// [`Workload`]: jobs in queue order are replayed as they come, and a job out
/// of order halts the replay ([`Halt::Unsorted`]: sort and simulate them
/// whole). A halted replay still takes every job fed.
pub fn simulate_fed(machine: &Machine, policy: PolicyKind, feed: &std::sync::mpsc::Receiver<Fed>) -> Fedout {
    assert!(!matches!(machine, Machine::Power(_)), "a fed replay is of a pool or a cluster");
    // the machine alone: the jobs come with the feed
    let w = Workload { jobs: Vec::new(), record_index: Vec::new(), skipped: Default::default(), capacity: 0, machine: machine.clone(), power_jobs: Vec::new(), sharing: None, reservations: Vec::new() };
    let w = &w;
    let mut feed = Feed { rx: feed, index: Vec::new(), range: TimeRange::new(&w.machine), last: None, halt: None, open: true, waited: std::time::Duration::ZERO };
    let mut list = Cow::Owned(Vec::new());
    let outcome = replay(w, Jobs { list: &mut list, feed: Some(&mut feed) }, policy, |_, _| {});
    let mut list = list.into_owned();
    if feed.halt != Some(Halt::Failed) {
        // a halted replay leaves jobs unread
        while feed.open {
            feed.receive(&mut list);
        }
    }
    let outcome = match feed.halt {
        Some(h) => Err(h),
        None => Ok(outcome),
    };
    Fedout { outcome, jobs: list, record_index: feed.index, waited_s: feed.waited.as_secs_f64() }
}

/// The jobs of a replay: held whole, or fed as they are read.
struct Jobs<'a, 'w> {
    list: &'a mut Cow<'w, [TraceJob]>,
    feed: Option<&'a mut Feed<'w>>,
}

/// The reader's side of a fed replay.
struct Feed<'r> {
    rx: &'r std::sync::mpsc::Receiver<Fed>,
    index: Vec<u32>,
    range: TimeRange,
    /// The queue key of the last job fed.
    last: Option<(i64, i64, u32)>,
    halt: Option<Halt>,
    /// The reader may feed more.
    open: bool,
    waited: std::time::Duration,
}

impl Feed<'_> {
    /// Take the next jobs the reader hands over (waiting for them) into `list`.
    fn receive(&mut self, list: &mut Vec<TraceJob>) {
        let t0 = std::time::Instant::now();
        let got = self.rx.recv();
        self.waited += t0.elapsed();
        match got {
            Ok(Fed::Jobs(chunk)) => {
                list.reserve(chunk.len());
                self.index.reserve(chunk.len());
                for (j, i) in chunk {
                    let key = queue_key(&j, i);
                    if self.halt.is_none() {
                        self.range.add(&j, None);
                        if self.last.is_some_and(|k| key < k) {
                            self.halt = Some(Halt::Unsorted);
                        }
                    }
                    self.last = Some(key);
                    list.push(j);
                    self.index.push(i);
                }
                // the bound only grows: checked once the handful is in, before
                // any of its jobs is replayed
                if self.halt.is_none() && self.range.check("").is_err() {
                    self.halt = Some(Halt::BeyondTimeRange);
                }
            }
            Ok(Fed::Failed) => {
                self.halt = Some(Halt::Failed);
                self.open = false;
            }
            Err(_) => self.open = false,
        }
    }
}

impl Jobs<'_, '_> {
    /// Whether job `i` is there, reading on to it if need be; never while halted.
    fn load(&mut self, i: usize) -> bool {
        if let Some(f) = self.feed.as_mut() {
            while f.halt.is_none() && f.open && i >= self.list.len() {
                f.receive(self.list.to_mut());
            }
            if f.halt.is_some() {
                return false;
            }
        }
        i < self.list.len()
    }

    fn halted(&self) -> bool {
        self.feed.as_ref().is_some_and(|f| f.halt.is_some())
    }
}

/// The replay of [`simulate_observed`] and [`simulate_fed`] (only as far as
/// the jobs came if the feed halted it).
fn replay(w: &Workload, jobs: Jobs<'_, '_>, policy: PolicyKind, observe: impl FnMut(&Engine, Time)) -> SimOutcome {
    let n = jobs.list.len();
    let built = match &w.machine {
        Machine::Pool(c) => Engine::new(policy, *c),
        Machine::Cluster { cluster, .. } => Engine::with_cluster(policy, cluster),
        Machine::Power(setup) => match (&setup.mode, policy) {
            (PowerMode::Parm(cfg), PolicyKind::Parm) => Ok(Engine::parm(setup.info.machine.clone(), cfg.clone())),
            (PowerMode::FixedCap { .. }, p) if p != PolicyKind::Parm => Engine::new(policy, setup.nodes()),
            (mode, p) => panic!("policy {p} cannot run a power-aware machine in mode {mode:?}"),
        },
    };
    let mut engine = built.expect("the caller matched the policy to the machine");
    if let Some(s) = &w.sharing {
        let cluster = match &w.machine {
            Machine::Cluster { cluster, .. } => cluster.as_ref().clone(),
            Machine::Pool(c) => tessera_core::Cluster::pool(*c),
            Machine::Power(setup) => tessera_core::Cluster::pool(setup.nodes()),
        };
        // the trace's system accepted every job: no submit limit refuses one
        engine = engine.with_sharing(s.accounts.clone(), s.priority, &cluster).expect("the caller gives accounts to a queue policy only").without_submit_limits();
        if !s.history.is_empty() {
            engine = engine.with_history(&s.history, s.history_at).expect("an engine with accounts and no job yet");
        }
    }
    // reservations are made at the trace's start (the caller checked them)
    let origin = jobs.list.first().map_or(0, |j| j.submit.min(0));
    for r in &w.reservations {
        let mut fx = Vec::new();
        engine.handle(origin, Input::Reserve(Box::new(r.clone())), &mut fx);
        assert!(!fx.iter().any(|x| matches!(x, Effect::Rejected { .. })), "a reservation checked by the caller: {fx:?}");
    }
    let nodeset = match &w.machine {
        Machine::Cluster { nodeset, .. } => nodeset.clone(),
        _ => None,
    };
    let clustered = matches!(w.machine, Machine::Cluster { .. });
    let parm = engine.as_parm().is_some();
    let charge = matches!(&w.machine, Machine::Power(s) if s.charge_solve_time) && parm;
    let meter = match &w.machine {
        Machine::Power(setup) => Some(Meter::new(setup, n)),
        _ => None,
    };
    let mut book = Book {
        jobs,
        clustered,
        parm,
        start: vec![Time::MIN; n],
        end: vec![Time::MIN; n],
        suspended: Vec::new(),
        released: Default::default(),
        since: Default::default(),
        due: vec![0; n],
        factor: Vec::new(),
        alloc: if clustered { Placements::sized(n) } else { Placements::default() },
        completions: BinaryHeap::with_capacity(1024),
        version: vec![0u32; n],
        killed: Vec::new(),
        wake: None,
        rejected: 0,
        meter,
        charge,
        pass_began: None,
        max_queue: 0,
        observe,
    };
    // each submitted job's index by its trace number (the first job of a
    // number), for SWF's preceding-job field: made at the first job that names
    // one (None before)
    let mut index_of: Option<std::collections::BTreeMap<i64, usize>> = None;
    let mut inputs: Vec<Input> = Vec::with_capacity(64);
    let mut next = 0usize;
    let mut passes = 0u64;
    // (a feed that halts ends the loop)
    while !book.jobs.halted() {
        let t_arrival = book.load(next).then(|| book.jobs.list[next].submit);
        let t_completion = book.completions.peek().map(|r| r.0 .0);
        let Some(now) = tessera_core::earliest([t_arrival, t_completion, book.wake]) else { break };
        book.deliver(now, &mut inputs);
        let delivered = !inputs.is_empty();
        if !delivered && t_arrival != Some(now) && book.wake != Some(now) && !parm {
            // only stale ends (of jobs killed earlier): nothing happens now. (PARM
            // keeps its decision at the instant a reconfiguration made stale, as
            // the simulator always has: its schedules stay comparable.)
            continue;
        }
        while book.load(next) && book.jobs.list[next].submit == now {
            let j = &book.jobs.list[next];
            let mut spec = w.machine.spec(j);
            spec.id = JobId(next as u64);
            spec.ticket = w.sharing.as_ref().map(|s| s.tickets[next]);
            if parm {
                spec.power = Some(w.power_jobs[next]);
            }
            // SWF fields 17 and 18: the job may start `think` seconds after its
            // preceding job ends (a preceding job later in the trace, or not
            // replayed, is no dependency)
            let mut after = Vec::new();
            if j.preceding > 0 && index_of.is_none() {
                index_of = Some(book.jobs.list[..next].iter().enumerate().rev().map(|(i, j)| (j.id, i)).collect());
            }
            let dep = index_of.as_mut().and_then(|m| {
                let k = (j.preceding > 0).then(|| m.get(&j.preceding).copied()).flatten();
                m.entry(j.id).or_insert(next);
                k
            });
            if let Some(k) = dep {
                let think = j.think.max(0);
                match book.end[k] {
                    Time::MIN => after.push(After { kind: AfterKind::Any, job: JobId(k as u64), delay: think }),
                    end => spec.begin = Some(end.saturating_add(think)).filter(|&b| b > now),
                }
            }
            inputs.push(Input::submission(spec, nodeset.clone(), after, Default::default()));
            next += 1;
        }
        passes += step(&mut engine, now, inputs.drain(..), true, &mut book);
        if let Some(m) = book.meter.as_mut() {
            m.sample(now, &engine);
        }
    }
    let halted = book.jobs.halted();
    let Book { start, end, suspended, released, factor, alloc, rejected, meter, max_queue, .. } = book;
    debug_assert!(halted || start.iter().all(|&s| s != Time::MIN), "a job never started");
    debug_assert_eq!(rejected, 0, "the engine rejected an input of the simulator");
    let dropped_nodesets = engine.dropped_nodesets();
    let power = meter.map(|m| m.finish(&engine, w, &end));
    SimOutcome { start, end, suspended, released, factor, alloc, dropped_nodesets, passes, max_queue, power, rejected }
}

/// What the run loop keeps per job, and the events still to deliver: the
/// simulator's side of [`step`].
struct Book<'a, 'w, F> {
    jobs: Jobs<'a, 'w>,
    clustered: bool,
    parm: bool,
    start: Vec<Time>,
    end: Vec<Time>,
    suspended: Vec<Time>,
    released: std::collections::BTreeMap<u32, Vec<(Time, Time)>>,
    /// When each job now suspended was suspended.
    since: std::collections::BTreeMap<u32, Time>,
    /// When each running job's processes end (its run time left, while suspended).
    due: Vec<Time>,
    factor: Vec<f64>,
    alloc: Placements,
    /// (end, job, version): natural ends of running jobs; a PARM reconfiguration
    /// or a kill moves a job's end, so earlier entries of that job go stale.
    completions: BinaryHeap<Reverse<(Time, u32, u32)>>,
    /// Current version of each job's end; older entries are stale.
    version: Vec<u32>,
    /// Jobs the engine asked to kill: they end now.
    killed: Vec<u32>,
    /// The engine's wake-up.
    wake: Option<Time>,
    /// Inputs the engine rejected.
    rejected: u64,
    meter: Option<Meter>,
    /// Charge PARM's decision time, measured from the start of its pass.
    charge: bool,
    pass_began: Option<std::time::Instant>,
    max_queue: usize,
    observe: F,
}

impl<F: FnMut(&Engine, Time)> Driver for Book<'_, '_, F> {
    /// Carry out one effect of the engine at `now`.
    fn effect(&mut self, _engine: &Engine, now: Time, e: Effect) {
        match e {
            Effect::Start { job, alloc: a, .. } => {
                let i = job.0 as usize;
                self.start[i] = now;
                let f = a.factor;
                set_sparse(&mut self.factor, self.start.len(), i, f, 1.0);
                let j = &self.jobs.list[i];
                if let Some(m) = self.meter.as_mut() {
                    m.started(i, a.procs, scaled(j.effective_runtime(), f));
                }
                if !self.parm {
                    // reference seconds run at the pace of the slowest node
                    self.due[i] = now.saturating_add(scaled(j.runtime, f));
                    self.completions.push(Reverse((self.due[i], i as u32, self.version[i])));
                }
                if self.clustered {
                    self.alloc.set(i, &a.parts);
                }
            }
            Effect::Configure { job, end: at, .. } => {
                let i = job.0 as usize;
                self.version[i] += 1;
                self.completions.push(Reverse((at, i as u32, self.version[i])));
            }
            Effect::Kill { job, .. } => self.killed.push(job.0 as u32),
            Effect::WakeAt(t) => self.wake = Some(t),
            Effect::Finished(r) => {
                let i = r.spec.id.0 as usize;
                self.end[i] = r.end;
                set_sparse(&mut self.suspended, self.start.len(), i, r.suspended_s, 0);
                if let Some(s) = self.since.remove(&(i as u32)) {
                    self.released.entry(i as u32).or_default().push((s, r.end));
                }
                self.version[i] += 1;
                if let (Some(m), Some(u)) = (self.meter.as_mut(), r.usage) {
                    m.job_energy_j[i] = u.energy_j;
                    m.job_node_s[i] = u.node_s;
                }
            }
            Effect::Suspend { job } => {
                // its end is put off: keep the run time left
                let i = job.0 as usize;
                self.version[i] += 1;
                self.due[i] -= now;
                self.since.insert(i as u32, now);
            }
            Effect::Resume { job } => {
                let i = job.0 as usize;
                self.due[i] += now;
                if let Some(s) = self.since.remove(&(i as u32)) {
                    self.released.entry(i as u32).or_default().push((s, now));
                }
                self.completions.push(Reverse((self.due[i], i as u32, self.version[i])));
            }
            // the simulator neither requeues nor fails nodes
            Effect::Requeued { .. } | Effect::Rejected { .. } => self.rejected += 1,
        }
    }

    /// Killed jobs end at once; zero-length jobs end at the instant they start.
    fn due(&mut self, now: Time, inputs: &mut Vec<Input>) {
        self.deliver(now, inputs);
    }

    fn pass_begins(&mut self, engine: &Engine, now: Time) {
        self.max_queue = self.max_queue.max(engine.queued());
        if self.wake.is_some_and(|t| t <= now) {
            self.wake = None; // this pass consumes it
        }
        self.pass_began = self.parm.then(std::time::Instant::now);
    }

    fn pass_made(&mut self, _now: Time) -> Option<Input> {
        let (t0, m) = (self.pass_began.take()?, self.meter.as_mut()?);
        let dt = t0.elapsed();
        m.decision_wall_s += dt.as_secs_f64();
        m.max_decision_wall_s = m.max_decision_wall_s.max(dt.as_secs_f64());
        // the jobs this decision started or changed wait for it
        self.charge.then(|| Input::DecisionTime { micros: dt.as_micros() as u64 })
    }

    fn passed(&mut self, engine: &Engine, now: Time, effects: &[Effect]) {
        // a pass that kills jobs at their limit schedules nothing: observers
        // see the pass that follows their completions
        if !effects.iter().any(|e| matches!(e, Effect::Kill { .. })) {
            (self.observe)(engine, now);
        }
    }
}

impl<F> Book<'_, '_, F> {
    /// Whether job `i` is there (see [`Jobs::load`]), with room kept for every
    /// job there.
    fn load(&mut self, i: usize) -> bool {
        let had = self.jobs.list.len();
        let there = self.jobs.load(i);
        let n = self.jobs.list.len();
        if n > had {
            self.start.resize(n, Time::MIN);
            self.end.resize(n, Time::MIN);
            self.due.resize(n, 0);
            self.version.resize(n, 0);
            if self.clustered {
                self.alloc.at.resize(n, Slot::default());
            }
            if !self.factor.is_empty() {
                self.factor.resize(n, 1.0);
            }
            if !self.suspended.is_empty() {
                self.suspended.resize(n, 0);
            }
        }
        there
    }

    /// Every completion due at `now` (killed jobs first), as inputs.
    fn deliver(&mut self, now: Time, inputs: &mut Vec<Input>) {
        for j in self.killed.drain(..) {
            if let Some(m) = self.meter.as_mut() {
                m.ended(j as usize);
            }
            self.version[j as usize] += 1;
            inputs.push(Input::Complete { job: JobId(j as u64), outcome: Outcome::Signaled(9) });
        }
        while let Some(&Reverse((t, j, v))) = self.completions.peek() {
            if t != now {
                break;
            }
            self.completions.pop();
            if self.version[j as usize] != v {
                continue;
            }
            if let Some(m) = self.meter.as_mut() {
                m.ended(j as usize);
            }
            self.version[j as usize] += 1;
            inputs.push(Input::Complete { job: JobId(j as u64), outcome: Outcome::Exited(0) });
        }
    }
}

/// Power drawn and energy used, sampled after every instant.
struct Meter {
    /// PARM (nodes are counted by its engine), or a fixed cap.
    parm: bool,
    budget_w: f64,
    /// Fixed-cap runs: busy and idle node power, and nodes busy now.
    busy_w: f64,
    idle_w: f64,
    nodes: u32,
    busy: u32,
    job_energy_j: Vec<f64>,
    job_node_s: Vec<f64>,
    start_nodes: Vec<u32>,
    timeline: Vec<PowerSample>,
    /// Fixed-cap runs: the one cap.
    cap_w: f64,
    max_power_w: f64,
    decision_wall_s: f64,
    max_decision_wall_s: f64,
}

impl Meter {
    fn new(setup: &PowerSetup, n: usize) -> Self {
        let cap = match setup.mode {
            PowerMode::FixedCap { cap_w } => cap_w,
            PowerMode::Parm(_) => setup.info.cpu_max_w,
        };
        Meter {
            parm: matches!(setup.mode, PowerMode::Parm(_)),
            budget_w: setup.info.machine.budget_w,
            busy_w: setup.busy_w(cap),
            idle_w: setup.info.machine.idle_w,
            nodes: setup.nodes(),
            busy: 0,
            job_energy_j: vec![0.0; n],
            job_node_s: vec![0.0; n],
            start_nodes: vec![0; n],
            timeline: Vec::new(),
            cap_w: cap,
            max_power_w: 0.0,
            decision_wall_s: 0.0,
            max_decision_wall_s: 0.0,
        }
    }

    fn started(&mut self, i: usize, nodes: u32, runtime: Time) {
        self.start_nodes[i] = nodes;
        self.busy += nodes;
        self.job_node_s[i] = nodes as f64 * runtime as f64;
        self.job_energy_j[i] = self.job_node_s[i] * self.busy_w;
    }

    fn ended(&mut self, i: usize) {
        if !self.parm {
            self.busy -= self.start_nodes[i];
        }
    }

    /// Power drawn now; panics if it exceeds the budget (the power invariant).
    fn sample(&mut self, now: Time, engine: &Engine) {
        let (w, busy, caps_w) = match engine.as_parm() {
            Some(p) => {
                let (mut n, mut sum, mut lo, mut hi) = (0u32, 0f64, f64::INFINITY, f64::NEG_INFINITY);
                for (nodes, cap) in p.configs() {
                    n += nodes;
                    sum += nodes as f64 * cap;
                    lo = lo.min(cap);
                    hi = hi.max(cap);
                }
                (p.power_w(), p.used_nodes(), (n > 0).then(|| (sum / n as f64, lo, hi)))
            }
            None => (self.busy as f64 * self.busy_w + (self.nodes - self.busy) as f64 * self.idle_w, self.busy, (self.busy > 0).then_some((self.cap_w, self.cap_w, self.cap_w))),
        };
        assert!(w <= self.budget_w * (1.0 + 1e-9) + 1e-6, "power drawn at t={now}: {w} W exceeds the budget {} W", self.budget_w);
        self.max_power_w = self.max_power_w.max(w);
        let s = PowerSample { t: now, power_w: w, busy_nodes: busy, caps_w };
        match self.timeline.last_mut() {
            Some(last) if last.t == now => *last = s,
            Some(last) if PowerSample { t: now, ..*last } == s => {}
            _ => self.timeline.push(s),
        }
    }

    fn finish(self, engine: &Engine, w: &Workload, end: &[Time]) -> PowerOutcome {
        let parm = engine.as_parm();
        let first = w.jobs.first().map_or(0, |j| j.submit);
        let last = end.iter().copied().max().unwrap_or(first).max(first);
        let mut energy_j = 0.0;
        let mut idle_from = (first, self.nodes as f64 * self.idle_w);
        for s in &self.timeline {
            energy_j += (s.t - idle_from.0) as f64 * idle_from.1;
            idle_from = (s.t, s.power_w);
        }
        energy_j += (last - idle_from.0) as f64 * idle_from.1;
        PowerOutcome {
            budget_w: self.budget_w,
            max_power_w: self.max_power_w,
            energy_j,
            job_energy_j: self.job_energy_j,
            job_node_s: self.job_node_s,
            start_nodes: self.start_nodes,
            timeline: self.timeline,
            parm: parm.map(|p| p.stats()),
            decision_wall_s: self.decision_wall_s,
            max_decision_wall_s: self.max_decision_wall_s,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn part(node: u32, cores: u32, mem: u64, gpus: u32) -> AllocPart {
        AllocPart { node, cores, mem, gpus }
    }

    #[test]
    fn placements_give_back_every_part_as_it_was_set() {
        let jobs: Vec<Vec<AllocPart>> = vec![
            // memory per core and GPUs per node throughout: kept short
            vec![part(3, 4, 8192, 1), part(9, 2, 4096, 1)],
            // no memory at all
            vec![part(0, 8, 0, 0)],
            // a whole node's memory on one part: kept whole
            vec![part(1, 2, 4096, 0), part(2, 2, 65_536, 0)],
            // GPUs that differ between parts
            vec![part(5, 1, 0, 2), part(6, 1, 0, 0)],
            // memory that is no multiple of the cores
            vec![part(7, 3, 1000, 0)],
            // no part
            vec![],
            // runs of consecutive nodes, broken by a gap, by other cores and
            // by a node out of order
            vec![part(10, 4, 0, 0), part(11, 4, 0, 0), part(12, 4, 0, 0), part(14, 4, 0, 0), part(15, 2, 0, 0), part(16, 2, 0, 0), part(13, 2, 0, 0)],
        ];
        let mut p = Placements::sized(jobs.len() + 1);
        for (i, parts) in jobs.iter().enumerate() {
            p.set(i, parts);
        }
        // a requeued job placed again: its last placement counts
        p.set(1, &[part(4, 8, 0, 0)]);
        for (i, parts) in jobs.iter().enumerate() {
            let want = if i == 1 { vec![part(4, 8, 0, 0)] } else { parts.clone() };
            let got: Vec<AllocPart> = p.get(i).into_iter().flatten().collect();
            assert_eq!(got, want, "job {i}");
            assert_eq!(p.get(i).is_some(), !want.is_empty(), "job {i}");
        }
        assert!(p.get(jobs.len()).is_none(), "a job never placed");
        assert!(p.get(jobs.len() + 5).is_none(), "a job out of range");
        assert_eq!(p.iter().count(), jobs.len() + 1);
        assert_eq!(p.whole.len(), 5, "only the jobs with an odd part are kept whole");
        assert_eq!(p.short.len(), 2 + 1 + 1 + 4, "consecutive nodes with the same cores make one run");
    }
}
