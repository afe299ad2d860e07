//! The agent protocol, both ways: a controller's reply decoded as an agent
//! decodes it, and an agent's report of ended jobs (any job, any attempt, any
//! times) applied to a controller state that has jobs running.
#![no_main]
use libfuzzer_sys::fuzz_target;
use std::sync::OnceLock;
use tessera_controller::state::{Action, Event, State};
use tessera_core::{Engine, PolicyKind};
use tessera_proto::api::{AgentMessage, PollReply, RegisterReply, SubmitRequest};

fn running(cluster: &tessera_core::Cluster) -> State {
    let engine = Engine::with_cluster(PolicyKind::Easy, cluster).expect("an engine");
    let mut state = State::new(engine, cluster, 1_000, 10);
    let mut out = Vec::new();
    let nodes = (0..cluster.nodes.len() as u32).collect();
    // apply takes the cluster to change (a reconfigure); this one never does
    let mut own = cluster.clone();
    state.apply(&mut own, 1_000, &[Event::AgentUp { agent: "a".into(), nodes }], &mut out);
    for (first, n) in [(1, 1), (2, 4), (3, 64)] {
        let req = SubmitRequest { script: format!("#!/bin/sh\n#SBATCH -n {n} -t 10\nsleep 1\n"), options: Vec::new(), workdir: "/tmp".into(), env: Default::default(), script_name: None, idempotency_key: None };
        let job = tessera_controller::request::validate(&req, cluster, 3600).expect("a valid job");
        state.apply(&mut own, 1_001, &[Event::Submit { first, user: "u".into(), uid: 1000, gid: 1000, req: Box::new(job) }], &mut out);
    }
    state
}

fuzz_target!(|data: &[u8]| {
    static CLUSTER: OnceLock<tessera_core::Cluster> = OnceLock::new();
    let cluster = CLUSTER.get_or_init(tessera_fuzz::cluster);
    let _ = serde_json::from_slice::<PollReply>(data);
    let _ = serde_json::from_slice::<RegisterReply>(data);
    let Ok(msg) = serde_json::from_slice::<AgentMessage>(data) else { return };
    let mut state = running(cluster);
    let mut own = cluster.clone();
    let mut out = Vec::new();
    let events: Vec<Event> = msg.ended.iter().map(|x| Event::Ended(*x)).collect();
    state.apply(&mut own, 2_000, &events, &mut out);
    for a in &out {
        if let Action::Record(r) = a {
            assert!(r.end >= r.start, "a record that ends before it starts: {r:?}");
        }
    }
    state.apply(&mut own, 3_000, &[Event::AgentLost { agent: msg.agent }], &mut out);
});
