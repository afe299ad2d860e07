//! The controller's `State` at its own layer: requests are admitted (who may
//! do what, what a submission must satisfy, which submission a key names) and
//! applied as journaled batches, and the test reads the actions and the jobs
//! as `tessera queue` lists them. No processes, no sockets, no clock.

use tessera_controller::actor::JobOp;
use tessera_controller::auth::{Identity, Role};
use tessera_controller::state::{Action, Event, State};
use tessera_controller::ApiError;
use tessera_core::{Cluster, Engine, PolicyKind};
use tessera_proto::api::{JobExit, JobStateCode, OptionArg, SubmitRequest};

const T0: i64 = 1_800_000_000;

pub struct StateEnv {
    pub cluster: Cluster,
    pub state: State,
    pub now: i64,
    /// Actions of the batches applied so far.
    pub actions: Vec<Action>,
}

pub fn user(name: &str, uid: u32) -> Identity {
    Identity { user: name.into(), uid, gid: uid, role: Role::User }
}

pub fn operator() -> Identity {
    Identity { user: "root".into(), uid: 0, gid: 0, role: Role::Operator }
}

pub fn agent() -> Identity {
    Identity { user: "agent1".into(), uid: 0, gid: 0, role: Role::Agent }
}

impl StateEnv {
    /// The default cluster (32 nodes of 8 cores), every node presented by one agent.
    pub fn new(policy: PolicyKind) -> StateEnv {
        let cluster = Cluster::from_toml(include_str!("../../../../examples/clusters/default.toml"), "default.toml").unwrap();
        let engine = Engine::with_cluster(policy, &cluster).unwrap();
        StateEnv::on(cluster, engine)
    }

    /// `cluster` under `engine`, every node presented by one agent.
    pub fn on(cluster: Cluster, engine: Engine) -> StateEnv {
        let state = State::new(engine, &cluster, T0, 5);
        let mut env = StateEnv { cluster, state, now: T0, actions: Vec::new() };
        let nodes = (0..env.cluster.nodes.len() as u32).collect();
        env.apply(vec![Event::AgentUp { agent: "agent1".into(), nodes }]);
        env
    }

    /// Apply one batch at the current instant.
    pub fn apply(&mut self, events: Vec<Event>) {
        let mut out = Vec::new();
        self.state.apply(&mut self.cluster, self.now, &events, &mut out);
        self.state.engine().sanity_check();
        self.actions.extend(out);
    }

    pub fn at(&mut self, t: i64) -> &mut Self {
        self.now = T0 + t;
        self
    }

    /// Submit a one-line script with `opts` as `who` (with an idempotency key,
    /// if given): the jobs it created, or why it was refused.
    pub fn submit(&mut self, who: &Identity, opts: &[(&str, &str)], key: Option<&str>) -> Result<Vec<u64>, ApiError> {
        let req = SubmitRequest {
            script: "#!/bin/sh\ntrue\n".into(),
            options: opts.iter().map(|(o, v)| OptionArg { option: o.to_string(), value: v.to_string() }).collect(),
            workdir: "/tmp".into(),
            idempotency_key: key.map(String::from),
            ..Default::default()
        };
        if let Some(ids) = self.state.seen(&self.cluster, 3600, who, &req, &[])? {
            return Ok(ids);
        }
        let first = self.state.ledger.next_id;
        let ev = self.state.admit_submit(&self.cluster, 3600, who, &req, first)?;
        let Event::Submit { req: r, .. } = &ev else { unreachable!() };
        let n = r.array.as_ref().map_or(1, |a| a.indices.len() as u64);
        self.apply(vec![ev]);
        Ok((first..first + n).collect())
    }

    /// `who` asks `op` of job `job`.
    pub fn op(&mut self, who: &Identity, job: u64, op: JobOp) -> Result<(), ApiError> {
        let ev = self.state.admit_op(who, job, op)?;
        self.apply(vec![ev]);
        Ok(())
    }

    /// Job `job`'s current run exited with `code` now.
    pub fn exit(&mut self, job: u64, code: i32) {
        let m = &self.state.ledger.jobs[&job];
        let x = JobExit { job, attempt: m.attempt, code: Some(code), signal: None, cpu_s: 1.0, start: m.start.unwrap(), end: self.now, limit_hit: false, failure: None, usage: None };
        self.apply(vec![Event::Ended(x)]);
    }

    /// Jobs launched so far, in order.
    pub fn launched(&self) -> Vec<u64> {
        self.actions.iter().filter_map(|a| if let Action::Launch { launch, .. } = a { Some(launch.job) } else { None }).collect()
    }

    /// A job's state and reason as `tessera queue` (or `job show`) lists it.
    pub fn shown(&mut self, job: u64) -> (JobStateCode, String) {
        let i = self.state.job_info(&self.cluster, job).expect("a known job");
        (i.state, i.reason)
    }
}

fn status(r: Result<impl std::fmt::Debug, ApiError>) -> u16 {
    match r {
        Ok(v) => panic!("accepted: {v:?}"),
        Err(e) => e.status,
    }
}

#[test]
fn users_act_on_their_own_jobs_operators_on_all_agents_on_none() {
    let mut env = StateEnv::new(PolicyKind::Easy);
    let (alice, bob) = (user("alice", 1001), user("bob", 1002));
    let a = env.submit(&alice, &[("-n", "8")], None).unwrap()[0];
    assert_eq!(status(env.op(&bob, a, JobOp::Cancel)), 403);
    assert_eq!(status(env.state.script(&bob, a)), 403, "bob may not read alice's script and environment");
    assert!(env.state.script(&alice, a).is_ok());
    assert_eq!(status(env.op(&alice, a, JobOp::Suspend)), 403, "only operators suspend");
    env.op(&operator(), a, JobOp::Suspend).unwrap();
    assert_eq!(env.shown(a).0, JobStateCode::Suspended);
    assert_eq!(status(env.submit(&agent(), &[("-n", "1")], None)), 403, "agents do not submit");
    assert_eq!(status(env.op(&agent(), a, JobOp::Cancel)), 403, "agents do not act on jobs");
    env.op(&operator(), a, JobOp::Cancel).unwrap();
    assert_eq!(status(env.op(&alice, a, JobOp::Cancel)), 409, "a job being killed is not cancelled again");
}

#[test]
fn a_hold_and_its_release_are_the_users_and_a_release_needs_a_hold() {
    let mut env = StateEnv::new(PolicyKind::Easy);
    let alice = user("alice", 1001);
    let big = env.submit(&alice, &[("-n", "256")], None).unwrap()[0];
    let j = env.submit(&alice, &[("-n", "256")], None).unwrap()[0];
    assert_eq!(env.launched(), vec![big]);
    assert_eq!(status(env.op(&alice, j, JobOp::Release)), 409, "not held");
    env.op(&alice, j, JobOp::Hold).unwrap();
    assert_eq!(env.shown(j), (JobStateCode::Pending, "JobHeldUser".into()));
    env.at(10).exit(big, 0);
    assert_eq!(env.launched(), vec![big], "a held job does not start");
    env.op(&alice, j, JobOp::Release).unwrap();
    assert_eq!(env.launched(), vec![big, j]);
}

#[test]
fn dependencies_wait_for_their_jobs_and_can_never_be_met_otherwise() {
    let mut env = StateEnv::new(PolicyKind::Easy);
    let alice = user("alice", 1001);
    let a = env.submit(&alice, &[("-n", "8")], None).unwrap()[0];
    let ok = env.submit(&alice, &[("-n", "8"), ("-d", &format!("afterok:{a}"))], None).unwrap()[0];
    let notok = env.submit(&alice, &[("-n", "8"), ("-d", &format!("afternotok:{a}"))], None).unwrap()[0];
    let any = env.submit(&alice, &[("-n", "8"), ("-d", &format!("afterany:{a}"))], None).unwrap()[0];
    assert_eq!(env.launched(), vec![a]);
    assert_eq!(env.shown(ok).1, "Dependency");
    let detail = env.state.job_info(&env.cluster, ok).unwrap().reason_detail;
    assert_eq!(detail, format!("waits for afterok:{a}"));
    env.at(10).exit(a, 0);
    assert_eq!(env.launched(), vec![a, ok, any]);
    assert_eq!(env.shown(notok).0, JobStateCode::Cancelled, "afternotok on a success can never be met");
    // on a job that ended already: met at once, or refused at submit
    let late = env.submit(&alice, &[("-n", "8"), ("-d", &format!("afterok:{a}"))], None).unwrap()[0];
    assert_eq!(env.launched().last(), Some(&late));
    let e = env.submit(&alice, &[("-n", "8"), ("-d", &format!("afternotok:{a}"))], None).unwrap_err();
    assert_eq!(e.status, 400);
    assert!(e.body.error.contains("a condition that can still hold"), "{}", e.body.error);
    let e = env.submit(&alice, &[("-n", "8"), ("-d", "afterok:999")], None).unwrap_err();
    assert!(e.body.error.contains("job 999 is not known"), "{}", e.body.error);
}

#[test]
fn an_array_throttle_lets_its_limit_of_tasks_through() {
    let mut env = StateEnv::new(PolicyKind::Easy);
    let alice = user("alice", 1001);
    let ids = env.submit(&alice, &[("-n", "1"), ("--array", "0-3%2")], None).unwrap();
    assert_eq!(env.launched(), ids[..2].to_vec());
    assert_eq!(env.shown(ids[2]).1, "JobArrayTaskLimit");
    env.at(5).exit(ids[0], 0);
    assert_eq!(env.launched(), ids[..3].to_vec());
    // a waiting task cancelled lets none through: two are running still
    env.op(&alice, ids[3], JobOp::Cancel).unwrap();
    assert_eq!(env.launched(), ids[..3].to_vec());
    assert_eq!(env.shown(ids[3]).0, JobStateCode::Cancelled);
}

#[test]
fn an_idempotency_key_names_one_submission_while_its_jobs_are_known() {
    let mut env = StateEnv::new(PolicyKind::Easy);
    let (alice, bob) = (user("alice", 1001), user("bob", 1002));
    let first = env.submit(&alice, &[("-n", "4")], Some("k1")).unwrap();
    assert_eq!(env.submit(&alice, &[("-n", "4")], Some("k1")).unwrap(), first, "sent again: the same job");
    assert_eq!(env.state.ledger.jobs.len(), 1);
    assert_eq!(status(env.submit(&alice, &[("-n", "5")], Some("k1"))), 409, "the key names another request");
    assert_ne!(env.submit(&bob, &[("-n", "4")], Some("k1")).unwrap(), first, "keys are per user");
    // forgotten with its job, DONE_KEEP_S after it ended
    env.at(10).exit(first[0], 0);
    env.at(10 + tessera_controller::state::DONE_KEEP_S).apply(Vec::new());
    assert_ne!(env.submit(&alice, &[("-n", "4")], Some("k1")).unwrap(), first);
}

#[test]
fn singleton_jobs_of_a_user_and_name_run_one_at_a_time() {
    let mut env = StateEnv::new(PolicyKind::Easy);
    let (alice, bob) = (user("alice", 1001), user("bob", 1002));
    let a1 = env.submit(&alice, &[("-n", "1"), ("-J", "sim"), ("-d", "singleton")], None).unwrap()[0];
    let a2 = env.submit(&alice, &[("-n", "1"), ("-J", "sim"), ("-d", "singleton")], None).unwrap()[0];
    let other = env.submit(&alice, &[("-n", "1"), ("-J", "post"), ("-d", "singleton")], None).unwrap()[0];
    let b1 = env.submit(&bob, &[("-n", "1"), ("-J", "sim"), ("-d", "singleton")], None).unwrap()[0];
    assert_eq!(env.launched(), vec![a1, other, b1], "one per user and name");
    assert_eq!(env.shown(a2).1, "Dependency");
    let detail = env.state.job_info(&env.cluster, a2).unwrap().reason_detail;
    assert!(detail.contains("singleton"), "{detail}");
    env.at(3).exit(a1, 1);
    assert_eq!(env.launched(), vec![a1, other, b1, a2], "the next starts when the first ends, however");
}
