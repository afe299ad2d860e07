//! Cluster files (TOML): a cluster or an error naming file, line and key.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    match tessera_core::Cluster::from_toml(text, "fuzz.toml") {
        Ok(c) => assert!(!c.nodes.is_empty(), "a cluster without nodes was accepted"),
        Err(e) => tessera_fuzz::bounded_error(&e),
    }
});
