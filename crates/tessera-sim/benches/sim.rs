//! Criterion benchmarks of the simulator on the shared traces: parsing alone, and
//! each policy over the already-parsed trace. `tessera sim bench` prints the same
//! figures in one table; BENCHMARKS.md records them.

use criterion::{criterion_group, criterion_main, Criterion};
use std::time::Duration;
use tessera_core::PolicyKind;
use tessera_sim::workload::{default_capacity, prepare};
use tessera_workload::swf::SwfReader;
use tessera_workload::traces::shared_trace;

fn bench(c: &mut Criterion) {
    for file in ["HPC2N-2002-2.2-cln.swf.gz", "CEA-Curie-2011-2.1-cln.swf.gz", "RICC-2010-2.swf.gz"] {
        let Some(path) = shared_trace(file) else {
            eprintln!("SKIPPED {file}: shared traces not found (set TESSERA_TRACES)");
            continue;
        };
        let mut g = c.benchmark_group(file.trim_end_matches(".swf.gz"));
        g.sample_size(10).warm_up_time(Duration::from_millis(500)).measurement_time(Duration::from_secs(3));
        g.bench_function("parse", |b| b.iter(|| SwfReader::read_file(&path, false).unwrap()));
        let (header, records, _) = SwfReader::read_file(&path, false).unwrap();
        let w = prepare(&records, default_capacity(&header, file).unwrap());
        for policy in [PolicyKind::Fcfs, PolicyKind::Easy, PolicyKind::Conservative] {
            g.bench_function(policy.name(), |b| b.iter(|| tessera_sim::simulate(&w, policy)));
        }
        g.finish();
    }
}

criterion_group!(benches, bench);
criterion_main!(benches);
