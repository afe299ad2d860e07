//! The engine driven as a driver drives it, for the benchmarks of one pass
//! ([`crate::pass`]) and of an endless stream of jobs ([`crate::stream`]): jobs
//! taken from a real trace (default RICC-2010-2, Parallel Workloads Archive:
//! Feitelson, Tsafrir & Krakov, JPDC 74(10) 2014), every effect consumed,
//! completions at their actual ends. Deterministic for a given seed.

use anyhow::{Context, Result};
use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap};
use std::path::{Path, PathBuf};
use std::time::Instant;
use tessera_core::{Effect, Engine, Input, JobId, JobSpec, Outcome, PolicyKind, Time};
use tessera_workload::jobs::job_from_record;
use tessera_workload::SwfReader;

const DEFAULT_TRACE: &str = "RICC-2010-2.swf.gz";

/// What the benchmarks take from a trace job: its processors (cut to the
/// machine), its estimate, and how long it runs (its runtime, cut at the estimate).
#[derive(Clone, Copy)]
pub struct Shape {
    pub procs: u32,
    pub estimate: Time,
    pub runtime: Time,
    /// MiB per processor; 0 if unknown.
    pub mem: u64,
    /// The trace's user and group (SWF fields 12 and 13).
    pub user: i32,
    pub group: i32,
}

pub fn trace_path(trace: &Option<PathBuf>) -> Result<PathBuf> {
    match trace {
        Some(p) => Ok(tessera_workload::traces::resolve(p)?),
        None => Ok(tessera_workload::traces::shared_dir()
            .context("no --trace given and the shared traces directory was not found (set TESSERA_TRACES)")?
            .join(DEFAULT_TRACE)),
    }
}

/// The trace's usable jobs in file order, from record `skip` on, cut to `cores`.
pub fn shapes(path: &Path, skip: usize, cores: u32) -> Result<impl Iterator<Item = Result<Shape>>> {
    let reader = SwfReader::open(path)?;
    Ok(reader.skip(skip).filter_map(move |r| match r {
        Err(e) => Some(Err(e.into())),
        Ok(r) => job_from_record(&r).ok().map(|j| {
            Ok(Shape {
                procs: j.procs.min(cores),
                estimate: j.estimate,
                runtime: j.effective_runtime(),
                mem: j.mem_per_proc_mb,
                user: j.user,
                group: j.group,
            })
        }),
    }))
}

/// The driver's side: every effect consumed, runtimes kept until jobs start, and
/// running jobs ordered by their actual end. Memory follows the live jobs.
/// Every input and every pass goes through [`tessera_core::step`], as with
/// every driver; a pass's duration is taken between the step's pass hooks.
pub struct Driver {
    pub engine: Engine,
    runtime: HashMap<JobId, Time>,
    /// Running jobs by actual end (end, id).
    pub ends: BinaryHeap<Reverse<(Time, u64)>>,
    next_id: u64,
    pub started: u64,
    pub finished: u64,
    /// With fair share: each job charges its trace user's association under
    /// its group's account (`Accounts::from_groups`).
    accounts: Option<tessera_core::share::Accounts>,
}

/// The bench's side of [`tessera_core::step`] for one instant.
struct Instant_<'a> {
    runtime: &'a mut HashMap<JobId, Time>,
    ends: &'a mut BinaryHeap<Reverse<(Time, u64)>>,
    started: &'a mut u64,
    finished: &'a mut u64,
    error: Option<anyhow::Error>,
    began: Option<Instant>,
    /// The first pass's duration (s).
    first: Option<f64>,
}

impl tessera_core::Driver for Instant_<'_> {
    fn effect(&mut self, _engine: &Engine, now: Time, e: Effect) {
        if self.error.is_some() {
            return;
        }
        match e {
            Effect::Start { job, .. } => match self.runtime.remove(&job) {
                Some(run) => {
                    self.ends.push(Reverse((now + run, job.0)));
                    *self.started += 1;
                }
                None => self.error = Some(anyhow::anyhow!("job {job} started twice")),
            },
            Effect::Finished(_) => *self.finished += 1,
            // Runtimes are cut at the estimate and completions are delivered at
            // their instant, so a job is never overdue: a kill can only come at
            // the instant its completion is already due, and every wake-up
            // instant is a completion instant.
            Effect::Kill { .. } | Effect::WakeAt(_) => {}
            Effect::Rejected { input, job, reason } => {
                self.error = Some(anyhow::anyhow!("the engine rejected {input} of job {job:?}: {reason}"))
            }
            other => self.error = Some(anyhow::anyhow!("unexpected effect {other:?}")),
        }
    }

    fn pass_begins(&mut self, _engine: &Engine, _now: Time) {
        self.began = Some(Instant::now());
    }

    fn pass_made(&mut self, _now: Time) -> Option<Input> {
        let dt = self.began.take()?.elapsed().as_secs_f64();
        self.first.get_or_insert(dt);
        None
    }
}

impl Driver {
    pub fn new(engine: Engine) -> Self {
        Driver {
            engine,
            runtime: HashMap::new(),
            ends: BinaryHeap::new(),
            next_id: 1,
            started: 0,
            finished: 0,
            accounts: None,
        }
    }

    /// The engine with multifactor priority and Fair Tree (Tessera's default
    /// weights and periods), every trace group of `pairs` (group, user) an
    /// account and each (user, group) an association.
    pub fn fairshare(engine: Engine, cluster: &tessera_core::Cluster, pairs: impl IntoIterator<Item = (i64, i64)>) -> Result<Self> {
        use tessera_core::share::{Accounts, PriorityConfig, PriorityKind};
        let accounts = Accounts::from_groups(pairs);
        let config = PriorityConfig { kind: PriorityKind::Multifactor, ..Default::default() };
        let engine = engine.with_sharing(accounts.clone(), config, cluster)?;
        Ok(Driver { accounts: Some(accounts), ..Driver::new(engine) })
    }

    pub fn submit(&mut self, now: Time, s: Shape) -> Result<()> {
        let id = JobId(self.next_id);
        self.next_id += 1;
        self.runtime.insert(id, s.runtime);
        let ticket = match &self.accounts {
            Some(acc) => {
                let user = tessera_core::share::trace_user(s.user as i64);
                Some(acc.ticket(&user, Some(&tessera_core::share::trace_group(s.group as i64)), None, 0).with_context(|| format!("{user}: no association"))?)
            }
            None => None,
        };
        self.handle(
            now,
            Input::submit(JobSpec {
                mem_per_proc_mb: s.mem,
                ticket,
                ..JobSpec::new(id, s.procs, s.estimate)
            }),
        )
    }

    pub fn complete(&mut self, now: Time, id: u64) -> Result<()> {
        self.handle(
            now,
            Input::Complete {
                job: JobId(id),
                outcome: Outcome::Exited(0),
            },
        )
    }

    /// A pass at `now` ([`tessera_core::step`]); returns its duration in
    /// seconds (the first pass's, if the instant needs more).
    pub fn pass(&mut self, now: Time) -> Result<f64> {
        Ok(self.step(now, None, true)?.unwrap_or(0.0))
    }

    /// An input at instant `now`, handled at once (without a pass).
    pub fn handle(&mut self, now: Time, input: Input) -> Result<()> {
        self.step(now, Some(input), false).map(|_| ())
    }

    fn step(&mut self, now: Time, input: Option<Input>, pass: bool) -> Result<Option<f64>> {
        let mut d = Instant_ {
            runtime: &mut self.runtime,
            ends: &mut self.ends,
            started: &mut self.started,
            finished: &mut self.finished,
            error: None,
            began: None,
            first: None,
        };
        tessera_core::step(&mut self.engine, now, input, pass, &mut d);
        match d.error {
            Some(e) => Err(e),
            None => Ok(d.first),
        }
    }

    pub fn busy(&self) -> f64 {
        1.0 - self.engine.free() as f64 / self.engine.capacity() as f64
    }
}

pub fn policies(names: &[String]) -> Result<Vec<PolicyKind>> {
    if names.is_empty() {
        return Ok(vec![
            PolicyKind::Fcfs,
            PolicyKind::Easy,
            PolicyKind::Conservative,
        ]);
    }
    Ok(names.iter().map(|p| p.parse()).collect::<Result<_, _>>()?)
}

