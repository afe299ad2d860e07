//! sacct histories: every job once, records and a workload on a cluster, or
//! an error naming file, line and field (never a panic, never an unbounded
//! message).
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    // at most 65,536 node names in all, so that a timeout flags a read slower
    // than linear in its input, not a dump of many big jobs read in linear time
    match tessera_slurm::sacct::read_at_most(text, "sacct.txt", 1 << 16) {
        Err(e) => tessera_fuzz::bounded_error(&e),
        Ok(h) => {
            let mut ids: Vec<i64> = h.jobs.iter().map(|j| j.id).collect();
            ids.sort_unstable();
            ids.dedup();
            assert_eq!(ids.len(), h.jobs.len(), "a job imported twice");
            // nodes named as the seed's (examples/slurm/sacct.txt)
            let c = tessera_core::Cluster::from_toml("[[nodetype]]\nname = \"bdw\"\nnodes = \"bdw[001-008]\"\ncores = 28\nmemory = \"128G\"\n[[nodetype]]\nname = \"skl\"\nnodes = \"skl[001-004]\"\ncores = 40\n[[nodetype]]\nname = \"gpu\"\nnodes = \"gpu[01-02]\"\ncores = 64\ngpus = 4\n[[partition]]\nname = \"batch\"\nnodetypes = [\"bdw\", \"skl\"]\n[[partition]]\nname = \"gpu\"\nnodetypes = [\"gpu\"]\n", "fuzz.toml").expect("the fuzz cluster");
            let (_, swf) = tessera_slurm::history::swf(&h, &c, "sacct.txt");
            assert_eq!(swf.len(), h.jobs.len());
            assert!(swf.iter().all(|r| r.run_time >= -1 && r.wait_time >= -1 && r.avg_cpu_time.is_finite()), "a record SWF cannot hold");
            match tessera_slurm::history::records(&h, &c, "sacct.txt") {
                Ok((_, recs)) => assert!(recs.iter().all(|r| r.end >= r.start && r.suspended_s >= 0 && r.suspended_s <= r.end - r.start)),
                Err(e) => tessera_fuzz::bounded_error(&e),
            }
        }
    }
});
