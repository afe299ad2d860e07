//! The accounting store read back: rows of any values (consistent or not,
//! written with SQL as another program or a hand edit could) in a store, then
//! every report. Each either refuses the run with an error or reports it; none
//! panics, and the figures of a run it accepts are finite.
#![no_main]
use arbitrary::Arbitrary;
use libfuzzer_sys::fuzz_target;
use tessera_accounting::{acct, apel, billing, overhead, store::Store, usage};

#[derive(Arbitrary, Debug)]
struct Node {
    id: u8,
    cores: i16,
    memory_mb: i32,
    gpus: i8,
    factor: f32,
    unit: (i8, i16, i8),
    partition: bool,
}

#[derive(Arbitrary, Debug)]
struct Job {
    submit: i32,
    wait: i16,
    run: i16,
    procs: i16,
    mem_mb: i32,
    factor: f32,
    user: u8,
    state: u8,
    partition: bool,
    allocs: Vec<(u8, i16, i32, i8)>,
}

#[derive(Arbitrary, Debug)]
struct Run {
    epoch: i32,
    far: bool,
    complete: bool,
    nodes: Vec<Node>,
    jobs: Vec<Job>,
}

const STATES: [&str; 6] = ["COMPLETED", "FAILED", "CANCELLED", "TIMEOUT", "NODE_FAIL", "OUT_OF_MEMORY"];

fn fill(store: &Store, r: &Run) -> rusqlite_result::Result<()> {
    let c = store.connection();
    let epoch = if r.far { i64::from(r.epoch) << 20 } else { i64::from(r.epoch) };
    c.execute("INSERT INTO runs (id, kind, label, site, cluster, policy, epoch_offset, recorded_at, complete) VALUES (1, 'simulation', 'f', 's', 'c', 'easy', ?1, 0, ?2)", rusqlite_result::params![epoch, r.complete])?;
    for n in r.nodes.iter().take(16) {
        let part = if n.partition { "batch" } else { "gpu" };
        let _ = c.execute(
            "INSERT INTO nodes (run_id, node_id, name, node_type, partition, cores, memory_mb, gpus, hs06_per_core, factor, unit_cores, unit_memory_mb, unit_gpus) VALUES (1, ?1, ?2, 't', ?3, ?4, ?5, ?6, 10.0, ?7, ?8, ?9, ?10)",
            rusqlite_result::params![n.id, format!("n{}", n.id), part, n.cores, n.memory_mb, n.gpus, f64::from(n.factor), n.unit.0, n.unit.1, n.unit.2],
        );
    }
    for (i, j) in r.jobs.iter().take(32).enumerate() {
        let start = i64::from(j.submit) + i64::from(j.wait);
        let end = start + i64::from(j.run);
        let part = if j.partition { "batch" } else { "gpu" };
        let ok = c.execute(
            "INSERT INTO jobs (id, run_id, job_id, name, user, grp, account, partition, submit_time, start_time, end_time, state, exit_code, req_procs, req_mem_mb, time_limit, alloc_cores, alloc_nodes, factor, wall_raw_s, wall_norm_s, cpu_raw_s, cpu_norm_s, core_hours, norm_core_hours, hs06_hours, hs06_per_core, energy_j, suspended_s) \
             VALUES (?1, 1, ?1, 'j', ?2, 'g', 'a', ?3, ?4, ?5, ?6, ?7, 0, ?8, ?9, 3600, ?8, ?10, ?11, ?12, ?12, ?12, ?12, 1.0, 1.0, NULL, NULL, NULL, 0)",
            rusqlite_result::params![i as i64 + 1, format!("user{}", j.user), part, j.submit, start, end, STATES[j.state as usize % 6], j.procs, j.mem_mb, j.allocs.len() as i64, f64::from(j.factor), j.run],
        );
        if ok.is_err() {
            continue;
        }
        for a in j.allocs.iter().take(4) {
            c.execute("INSERT INTO allocations (job, run_id, node_id, cores, memory_mb, gpus, start_time, end_time) VALUES (?1, 1, ?2, ?3, ?4, ?5, ?6, ?7)", rusqlite_result::params![i as i64 + 1, a.0, a.1, a.2, a.3, start, end])?;
            // a step of it, on a node list of any text
            let _ = c.execute(
                "INSERT INTO steps (job, run_id, step, name, node_list, ntasks, start_time, end_time, state, exit_code, signal, cpu_s, max_rss_kb) VALUES (?1, 1, ?2, 's', ?3, ?4, ?5, ?6, ?7, 0, 0, ?8, ?9)",
                rusqlite_result::params![i as i64 + 1, a.0.to_string(), format!("n[{}-{}]", a.0, a.1), a.1, start, end, STATES[a.3 as u8 as usize % 6], f64::from(j.factor), a.2],
            );
        }
    }
    Ok(())
}

mod rusqlite_result {
    pub use rusqlite::{params, Result};
}

fuzz_target!(|r: Run| {
    let store = Store::in_memory().expect("a store");
    store.connection().execute_batch("PRAGMA foreign_keys = OFF").expect("pragma");
    if fill(&store, &r).is_err() {
        return;
    }
    let run = match store.resolve_run(Some(1)) {
        Ok(run) => run,
        Err(e) => return tessera_fuzz::bounded_error(&e),
    };
    let (_, _, rows) = usage::utilization(&store, run).expect("utilization of a checked run");
    for row in rows {
        assert!(row.capacity_core_hours.is_finite() && row.allocated_core_hours.is_finite(), "{row:?}");
    }
    for by in [usage::By::User, usage::By::Partition, usage::By::NodeType, usage::By::Month] {
        usage::usage(&store, run, by).expect("usage of a checked run");
    }
    let o = overhead::overhead(&store, run).expect("overhead of a checked run");
    assert!(o.canonical_unit_hours.total.is_finite() && o.flagged_hours.is_finite());
    for f in &o.flagged_intervals {
        assert!(f.from < f.to && f.job_units <= f.units, "{f:?}");
    }
    let prices = billing::Prices { core_hour: 0.05, gb_hour: 0.01, gpu_hour: 1.0, kwh: 0.3 };
    billing::bill(&store, run, prices).expect("a bill of a checked run");
    let jobs = acct::jobs(&store, run, &acct::Filter { users: vec![], accounts: vec![], states: vec![], start_time: None, end_time: None, steps: true }).expect("acct of a checked run");
    for j in &jobs {
        let _ = acct::datetime(j.end);
    }
    let who = apel::Reporter { site: "s".into(), submit_host: "h".into(), machine: "m".into() };
    for kind in ["individual", "summary", "normalised", "sync"] {
        let msg = apel::Message::from_kind(kind, None).expect("a kind");
        apel::export(&store, run, msg, &who).expect("APEL of a checked run");
    }
});
