//! `TestEnv`: a hand-cranked driver for engine tests. Every effect must be consumed
//! (by `pass`) before the environment is dropped.

use std::collections::BTreeMap;
use tessera_core::{Effect, Engine, Input, JobId, JobIdx, JobSpec, PendingReason, PolicyKind, Time};

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

    /// Submit job `id` at `t` asking for `procs` processors for `est` seconds.
    pub fn submit(&mut self, t: Time, id: u64, procs: u32, est: Time) -> &mut Self {
        let i = JobIdx(self.id_of.len() as u32);
        self.engine.handle(t, Input::Submit(JobSpec { id: JobId(id), procs, estimate: est }), &mut self.effects);
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
            .map(|e| match e {
                Effect::Start { job, .. } => self.id_of[job.index()],
            })
            .collect()
    }

    pub fn reason(&self, t: Time, id: u64) -> Option<PendingReason> {
        self.engine.pending_reason(t, self.idx[&id])
    }
}

impl Drop for TestEnv {
    fn drop(&mut self) {
        if !std::thread::panicking() {
            assert!(self.effects.is_empty(), "unconsumed effects: {:?}", self.effects);
        }
    }
}
