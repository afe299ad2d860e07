//! `TestEnv`: a hand-cranked driver for engine tests. Every effect must be consumed
//! (by `pass`) before the environment is dropped.

use std::collections::BTreeMap;
use tessera_core::{Cluster, Effect, Engine, Input, JobId, JobIdx, JobSpec, NodeSetSpec, PendingReason, PolicyKind, Time};

pub struct TestEnv {
    pub engine: Engine,
    effects: Vec<Effect>,
    idx: BTreeMap<u64, JobIdx>,
    id_of: Vec<u64>,
}

impl TestEnv {
    pub fn new(policy: PolicyKind, capacity: u32) -> Self {
        TestEnv { engine: Engine::new(policy, capacity), effects: Vec::new(), idx: BTreeMap::new(), id_of: Vec::new() }
    }

    /// An engine on the nodes of a cluster file's text.
    pub fn cluster(policy: PolicyKind, toml: &str) -> Self {
        let c = Cluster::from_toml(toml, "test.toml").unwrap();
        TestEnv { engine: Engine::with_cluster(policy, &c), effects: Vec::new(), idx: BTreeMap::new(), id_of: Vec::new() }
    }

    /// Submit job `id` at `t` asking for `procs` processors for `est` seconds.
    pub fn submit(&mut self, t: Time, id: u64, procs: u32, est: Time) -> &mut Self {
        self.submit_spec(t, JobSpec::new(JobId(id), procs, est))
    }

    /// Submit with a per-job node-set request (any of the three syntaxes).
    pub fn submit_with_nodeset(&mut self, t: Time, id: u64, procs: u32, est: Time, nodeset: &str) -> &mut Self {
        let ns = self.engine.register_nodeset(NodeSetSpec::parse_job(nodeset).unwrap());
        self.submit_spec(t, JobSpec { nodeset: Some(ns), ..JobSpec::new(JobId(id), procs, est) })
    }

    pub fn submit_spec(&mut self, t: Time, spec: JobSpec) -> &mut Self {
        let id = spec.id.0;
        assert!(self.engine.can_run(&spec), "job {id} can never run");
        let i = JobIdx(self.id_of.len() as u32);
        self.engine.handle(t, Input::Submit(spec), &mut self.effects);
        assert!(self.effects.is_empty(), "a submission started something");
        self.idx.insert(id, i);
        self.id_of.push(id);
        self
    }

    pub fn complete(&mut self, t: Time, id: u64) -> &mut Self {
        self.engine.handle(t, Input::Complete(self.idx[&id]), &mut self.effects);
        assert!(self.effects.is_empty(), "a completion started something");
        self
    }

    /// Run a pass at `t` and return the ids of the jobs it started, in start order.
    pub fn pass(&mut self, t: Time) -> Vec<u64> {
        self.engine.handle(t, Input::Pass, &mut self.effects);
        self.engine.sanity_check();
        self.effects
            .drain(..)
            .filter_map(|e| match e {
                Effect::Start { job, .. } => Some(self.id_of[job.index()]),
                Effect::Configure { .. } => panic!("a queue engine reconfigured a job"),
            })
            .collect()
    }

    pub fn reason(&self, t: Time, id: u64) -> Option<PendingReason> {
        self.engine.pending_reason(t, self.idx[&id])
    }

    /// Names of the nodes job `id` runs on, and its pace.
    pub fn placed(&self, c: &Cluster, id: u64) -> (Vec<String>, f64) {
        let a = self.engine.allocation(self.idx[&id]).expect("job has started");
        (a.parts.iter().map(|p| c.nodes[p.node as usize].name.clone()).collect(), a.factor)
    }
}

impl Drop for TestEnv {
    fn drop(&mut self) {
        if !std::thread::panicking() {
            assert!(self.effects.is_empty(), "unconsumed effects: {:?}", self.effects);
        }
    }
}
