//! Batch scripts: the #SBATCH directives are read, then the whole submission is
//! checked against a cluster, as the controller does.
#![no_main]
use libfuzzer_sys::fuzz_target;
use std::sync::OnceLock;
use tessera_proto::api::SubmitRequest;

fuzz_target!(|data: &[u8]| {
    static CLUSTER: OnceLock<tessera_core::Cluster> = OnceLock::new();
    let Ok(script) = std::str::from_utf8(data) else { return };
    if let Err(e) = tessera_proto::submit::directives(script) {
        tessera_fuzz::bounded_error(&e);
    }
    let req = SubmitRequest { script: script.to_string(), options: Vec::new(), workdir: "/tmp".into(), env: Default::default(), script_name: None, idempotency_key: None };
    if let Err(e) = tessera_controller::request::validate(&req, CLUSTER.get_or_init(tessera_fuzz::cluster), 3600) {
        tessera_fuzz::bounded_error(&e);
    }
});
