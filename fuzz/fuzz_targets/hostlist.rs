//! Hostlists: expansion never panics, errors are bounded, and compressing an
//! expansion and expanding it again gives the same names.
#![no_main]
use libfuzzer_sys::fuzz_target;
use tessera_core::hostlist::{compress, expand};

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    match expand(text) {
        Ok(names) if names.len() <= 10_000 => {
            let again = expand(&compress(&names)).expect("a compressed hostlist expands");
            assert_eq!(again, names, "compress then expand of `{text}`");
        }
        Ok(_) => {}
        Err(e) => tessera_fuzz::bounded_error(&e),
    }
});
