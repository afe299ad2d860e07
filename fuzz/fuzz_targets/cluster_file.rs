//! Cluster files (TOML): a cluster or an error naming file, line and key.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    // at most 65,536 nodes (a sixteenth of MAX_NODES), so that a timeout flags
    // a reader slower than linear in its input, not a big cluster read in
    // linear time
    match tessera_core::Cluster::from_toml_at_most(text, "fuzz.toml", 1 << 16) {
        Ok(c) => assert!(!c.nodes.is_empty(), "a cluster without nodes was accepted"),
        Err(e) => tessera_fuzz::bounded_error(&e),
    }
});
