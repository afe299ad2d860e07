//! slurm.conf: a cluster file Tessera reads back, or an error naming file,
//! line and field (never a panic, never an unbounded message).
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    let own = text.to_string();
    let load = move |n: &str| if n == "slurm.conf" { Ok(own.clone()) } else { Err("no such file".to_string()) };
    match tessera_slurm::conf::read("slurm.conf", &load) {
        Err(e) => tessera_fuzz::bounded_error(&e),
        // a cluster of at most 65,536 nodes (a sixteenth of MAX_NODES), so
        // that a timeout flags an import slower than linear in its input,
        // not a big cluster imported in linear time
        Ok(lines) => match tessera_slurm::site::import_at_most(&lines, None, "out.toml", 1 << 16) {
            Ok(i) => {
                let c = tessera_core::Cluster::from_toml(&i.toml, "out.toml").expect("the file written reads back");
                assert_eq!(c.nodes.len(), i.cluster.nodes.len(), "the file written is the cluster returned");
            }
            Err(e) => tessera_fuzz::bounded_error(&e),
        },
    }
});
