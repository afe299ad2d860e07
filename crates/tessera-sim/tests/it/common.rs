//! Helpers: build workloads from job tuples.

use tessera_core::PolicyKind;
use tessera_sim::workload::prepare;
use tessera_sim::{simulate, SimOutcome, Workload};
use tessera_workload::swf::SwfRecord;

/// A record: id, submit, runtime, procs, requested time (-1 for none).
pub fn rec(id: i64, submit: i64, run: i64, procs: i64, req_time: i64) -> SwfRecord {
    SwfRecord {
        submit_time: submit,
        run_time: run,
        allocated_procs: procs,
        requested_procs: procs,
        requested_time: req_time,
        ..SwfRecord::unknown(id)
    }
}

/// Simulate and return (job id, start, end) in queue order.
pub fn schedule(records: &[SwfRecord], capacity: u32, policy: PolicyKind) -> Vec<(i64, i64, i64)> {
    let w = prepare(records, capacity);
    let o = simulate(&w, policy);
    w.jobs.iter().enumerate().map(|(i, j)| (j.id, o.start[i], o.end[i])).collect()
}

pub fn run(records: &[SwfRecord], capacity: u32, policy: PolicyKind) -> (Workload, SimOutcome) {
    let w = prepare(records, capacity);
    let o = simulate(&w, policy);
    (w, o)
}
