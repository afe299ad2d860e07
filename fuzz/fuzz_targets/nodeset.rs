//! Node-set specifications, Moab's configuration form and a job's request form:
//! parsed or refused, and a parsed job request reads back the same.
#![no_main]
use libfuzzer_sys::fuzz_target;
use tessera_core::NodeSetSpec;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    if let Err(e) = NodeSetSpec::parse_moab(text) {
        tessera_fuzz::bounded_error(&e);
    }
    match NodeSetSpec::parse_job(text) {
        Ok(spec) => assert_eq!(NodeSetSpec::parse_job(&spec.to_string()).as_ref(), Ok(&spec), "`{text}` shown as `{spec}`"),
        Err(e) => tessera_fuzz::bounded_error(&e),
    }
});
