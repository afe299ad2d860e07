//! The HTTP API's request bodies: JSON decoded as the server decodes it, a
//! submission checked and then applied to a controller state, which schedules it.
#![no_main]
use libfuzzer_sys::fuzz_target;
use std::sync::OnceLock;
use tessera_controller::state::{Event, State};
use tessera_core::{Engine, PolicyKind};
use tessera_proto::api::{NodeAction, RegisterRequest, SubmitRequest};

fuzz_target!(|data: &[u8]| {
    static CLUSTER: OnceLock<tessera_core::Cluster> = OnceLock::new();
    let cluster = CLUSTER.get_or_init(tessera_fuzz::cluster);
    let _ = serde_json::from_slice::<NodeAction>(data);
    let _ = serde_json::from_slice::<RegisterRequest>(data);
    let Ok(req) = serde_json::from_slice::<SubmitRequest>(data) else { return };
    let job = match tessera_controller::request::validate(&req, cluster, 3600) {
        Ok(j) => j,
        Err(e) => return tessera_fuzz::bounded_error(&e),
    };
    let engine = Engine::with_cluster(PolicyKind::Easy, cluster).expect("an engine");
    let mut state = State::new(engine, cluster, 1_000, 10);
    let mut out = Vec::new();
    let nodes = (0..cluster.nodes.len() as u32).collect();
    // apply takes the cluster to change (a reconfigure); this one never does
    let mut own = cluster.clone();
    state.apply(&mut own, 1_000, &[Event::AgentUp { agent: "a".into(), nodes }], &mut out);
    state.apply(&mut own, 1_001, &[Event::Submit { first: 1, user: "u".into(), uid: 1000, gid: 1000, req: Box::new(job) }], &mut out);
    for id in state.live_ids() {
        let _ = state.job_info(cluster, id);
    }
});
