//! `TestEnv`: a hand-cranked driver for engine tests. Every effect must be consumed
//! (by `pass`, `take` or the helpers) before the environment is dropped.

use std::collections::BTreeMap;
use tessera_core::{
    Cluster, Effect, Engine, Input, JobId, JobRecord, JobSpec, NodeSetSpec, Outcome, PendingReason,
    PolicyKind, Time,
};

/// Replay jobs (submit time, spec, runtime in reference seconds, at most its
/// estimate; on nodes of factor f it runs ceil(runtime / f) seconds) through
/// `engine` with [`tessera_core::step`]: at each instant completions, then
/// arrivals, then a pass, with `sanity_check` after every input; a pass also at
/// every instant the engine asks to be woken. Returns each job's start; every
/// job must start.
pub fn replay(e: Engine, jobs: &[(Time, JobSpec, Time)]) -> BTreeMap<u64, Time> {
    replay_with(e, jobs, |_| Vec::new())
}

/// The tests' side of [`tessera_core::step`].
struct Replay<'a> {
    jobs: &'a [(Time, JobSpec, Time)],
    index: BTreeMap<u64, usize>,
    ends: BTreeMap<Time, Vec<u64>>,
    starts: BTreeMap<u64, Time>,
    wakes: std::collections::BTreeSet<Time>,
}

impl tessera_core::Driver for Replay<'_> {
    fn effect(&mut self, engine: &Engine, now: Time, x: Effect) {
        engine.sanity_check();
        match x {
            Effect::Start { job, alloc, .. } => {
                self.starts.insert(job.0, now);
                let run = self.jobs[self.index[&job.0]].2;
                self.ends
                    .entry(now + tessera_core::scaled(run, alloc.factor))
                    .or_default()
                    .push(job.0);
            }
            Effect::WakeAt(w) => {
                if w > now {
                    self.wakes.insert(w);
                }
            }
            Effect::Finished(_) => {}
            other => panic!("unexpected {other:?}"),
        }
    }

    /// Zero-length jobs end at the instant they start.
    fn due(&mut self, now: Time, inputs: &mut Vec<Input>) {
        for id in self.ends.remove(&now).unwrap_or_default() {
            inputs.push(Input::Complete {
                job: JobId(id),
                outcome: Outcome::Exited(0),
            });
        }
    }
}

/// [`replay`], with the inputs `before` gives at every instant (they come after
/// the instant's completions and before its arrivals).
pub fn replay_with(
    mut e: Engine,
    jobs: &[(Time, JobSpec, Time)],
    mut before: impl FnMut(Time) -> Vec<Input>,
) -> BTreeMap<u64, Time> {
    let mut arrivals: BTreeMap<Time, Vec<usize>> = BTreeMap::new();
    for (i, j) in jobs.iter().enumerate() {
        arrivals.entry(j.0).or_default().push(i);
    }
    let mut r = Replay {
        jobs,
        index: jobs.iter().enumerate().map(|(i, j)| (j.1.id.0, i)).collect(),
        ends: BTreeMap::new(),
        starts: BTreeMap::new(),
        wakes: Default::default(),
    };
    loop {
        let next = [arrivals.keys().next(), r.ends.keys().next(), r.wakes.iter().next()];
        let Some(now) = next.into_iter().flatten().copied().min() else {
            break;
        };
        r.wakes.remove(&now);
        let mut inputs = Vec::new();
        for id in r.ends.remove(&now).unwrap_or_default() {
            inputs.push(Input::Complete {
                job: JobId(id),
                outcome: Outcome::Exited(0),
            });
        }
        inputs.extend(before(now));
        for i in arrivals.remove(&now).unwrap_or_default() {
            inputs.push(Input::submit(jobs[i].1));
        }
        tessera_core::step(&mut e, now, inputs, true, &mut r);
        e.sanity_check();
    }
    assert_eq!(r.starts.len(), jobs.len(), "every job starts");
    r.starts
}

pub struct TestEnv {
    pub engine: Engine,
    effects: Vec<Effect>,
}

impl TestEnv {
    pub fn new(policy: PolicyKind, capacity: u32) -> Self {
        TestEnv {
            engine: Engine::new(policy, capacity).unwrap(),
            effects: Vec::new(),
        }
    }

    /// An engine on the nodes of a cluster file's text.
    pub fn cluster(policy: PolicyKind, toml: &str) -> Self {
        let c = Cluster::from_toml(toml, "test.toml").unwrap();
        TestEnv {
            engine: Engine::with_cluster(policy, &c).unwrap(),
            effects: Vec::new(),
        }
    }

    /// Submit job `id` at `t` asking for `procs` processors for `est` seconds.
    pub fn submit(&mut self, t: Time, id: u64, procs: u32, est: Time) -> &mut Self {
        self.submit_spec(t, JobSpec::new(JobId(id), procs, est))
    }

    /// Submit with a per-job node-set request (any of the three syntaxes).
    pub fn submit_with_nodeset(
        &mut self,
        t: Time,
        id: u64,
        procs: u32,
        est: Time,
        nodeset: &str,
    ) -> &mut Self {
        let ns = NodeSetSpec::parse_job(nodeset).unwrap();
        self.submit_full(t, JobSpec::new(JobId(id), procs, est), Some(ns))
    }

    pub fn submit_spec(&mut self, t: Time, spec: JobSpec) -> &mut Self {
        self.submit_full(t, spec, None)
    }

    /// Submit a job with its own node-set request, if any.
    pub fn submit_full(&mut self, t: Time, spec: JobSpec, nodeset: Option<NodeSetSpec>) -> &mut Self {
        let id = spec.id.0;
        assert_eq!(self.engine.can_run(&spec, nodeset.as_ref()), Ok(()), "job {id} can never run");
        self.input(t, Input::submission(spec, nodeset, Vec::new(), Default::default()));
        self
    }

    /// Handle an input; only wake-ups may come out (consumed here).
    pub fn input(&mut self, t: Time, input: Input) -> &mut Self {
        self.engine.handle(t, input, &mut self.effects);
        self.effects.retain(|e| !matches!(e, Effect::WakeAt(_)));
        assert!(
            self.effects.is_empty(),
            "unexpected effects: {:?}",
            self.effects
        );
        self
    }

    /// Handle an input and return its effects (wake-ups included).
    pub fn take(&mut self, t: Time, input: Input) -> Vec<Effect> {
        self.engine.handle(t, input, &mut self.effects);
        self.engine.sanity_check();
        std::mem::take(&mut self.effects)
    }

    /// Job `id` ended normally at `t`; returns its final record.
    pub fn complete(&mut self, t: Time, id: u64) -> &mut Self {
        let fx = self.take(
            t,
            Input::Complete {
                job: JobId(id),
                outcome: Outcome::Exited(0),
            },
        );
        assert!(
            fx.iter()
                .any(|e| matches!(e, Effect::Finished(r) if r.spec.id.0 == id)),
            "job {id} did not finish: {fx:?}"
        );
        assert!(
            fx.iter()
                .all(|e| matches!(e, Effect::Finished(_) | Effect::WakeAt(_))),
            "a completion did more: {fx:?}"
        );
        self
    }

    /// Job `id` ended at `t` with `outcome`; returns its final record, if it left.
    pub fn complete_with(&mut self, t: Time, id: u64, outcome: Outcome) -> Option<JobRecord> {
        let fx = self.take(
            t,
            Input::Complete {
                job: JobId(id),
                outcome,
            },
        );
        fx.into_iter().find_map(|e| match e {
            Effect::Finished(r) => Some(*r),
            _ => None,
        })
    }

    /// Run a pass at `t` and return the ids of the jobs it started, in start order.
    pub fn pass(&mut self, t: Time) -> Vec<u64> {
        self.engine.handle(t, Input::Pass, &mut self.effects);
        self.engine.sanity_check();
        self.effects
            .drain(..)
            .filter_map(|e| match e {
                Effect::Start { job, .. } => Some(job.0),
                Effect::WakeAt(_) => None,
                other => panic!("a pass did more than start jobs: {other:?}"),
            })
            .collect()
    }

    pub fn reason(&mut self, t: Time, id: u64) -> Option<PendingReason> {
        self.engine.pending_reason(t, JobId(id))
    }

    /// Names of the nodes job `id` runs on, and its pace.
    pub fn placed(&self, c: &Cluster, id: u64) -> (Vec<String>, f64) {
        let a = self.engine.allocation(JobId(id)).expect("job has started");
        (
            a.parts
                .iter()
                .map(|p| c.nodes[p.node as usize].name.clone())
                .collect(),
            a.factor,
        )
    }
}

impl Drop for TestEnv {
    fn drop(&mut self) {
        if !std::thread::panicking() {
            assert!(
                self.effects.is_empty(),
                "unconsumed effects: {:?}",
                self.effects
            );
        }
    }
}
