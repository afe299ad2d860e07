//! Time and size specifications: sbatch's --time, --mem, --array and
//! --dependency, and acct's --starttime.
#![no_main]
use libfuzzer_sys::fuzz_target;
use tessera_proto::submit::{parse_array, parse_dependency, parse_mem_mib, parse_time_limit};

fuzz_target!(|data: &[u8]| {
    let Ok(s) = std::str::from_utf8(data) else { return };
    match parse_time_limit("--time", s) {
        Ok(Some(t)) => assert!(t >= 0, "--time {s} gave {t}"),
        Ok(None) => {}
        Err(e) => tessera_fuzz::bounded_error(&e),
    }
    if let Err(e) = parse_mem_mib("--mem", s) {
        tessera_fuzz::bounded_error(&e);
    }
    if let Err(e) = parse_array("--array", s) {
        tessera_fuzz::bounded_error(&e);
    }
    if let Err(e) = parse_dependency("--dependency", s) {
        tessera_fuzz::bounded_error(&e);
    }
    // a date reads as one (or not at all) and prints back without a panic
    if let Some(t) = tessera_accounting::acct::parse_time(s) {
        let _ = tessera_accounting::acct::datetime(t);
    }
});
