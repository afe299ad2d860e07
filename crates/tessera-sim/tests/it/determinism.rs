//! Same input, byte-identical outputs.

use tessera_core::PolicyKind;
use tessera_sim::output::{write_jobs_csv, write_swf};
use tessera_sim::{prepare, simulate, Summary};
use tessera_workload::lublin::{generate, LublinParams};

fn outputs(policy: PolicyKind) -> (Vec<u8>, Vec<u8>, String) {
    let (header, records) = generate(&LublinParams::new(128, 3000, 42)).unwrap();
    let w = prepare(&records, 128);
    let o = simulate(&w, policy);
    let mut csv = Vec::new();
    write_jobs_csv(&mut csv, &w, &o).unwrap();
    let mut swf = Vec::new();
    write_swf(&mut swf, &header, "test", &records, &w, &o).unwrap();
    let mut s = Summary::compute("lublin", &w, &o);
    s.policy = policy.name().into();
    (csv, swf, serde_json::to_string(&s).unwrap())
}

#[test]
fn same_input_gives_byte_identical_outputs() {
    for p in [PolicyKind::Fcfs, PolicyKind::Easy, PolicyKind::Conservative] {
        let a = outputs(p);
        let b = outputs(p);
        assert!(a.0 == b.0, "{p}: jobs CSV differs between runs");
        assert!(a.1 == b.1, "{p}: SWF differs between runs");
        assert_eq!(a.2, b.2, "{p}: summary differs between runs");
    }
}
