//! SWF text, strict and lenient: every line is read or refused with a bounded error.
#![no_main]
use libfuzzer_sys::fuzz_target;
use tessera_workload::swf::SwfReader;

fuzz_target!(|data: &[u8]| {
    for lenient in [false, true] {
        let mut r = SwfReader::new(std::io::Cursor::new(data), "fuzz.swf").lenient(lenient);
        if let Err(e) = r.header() {
            tessera_fuzz::bounded_error(&e);
            continue;
        }
        for rec in r.by_ref() {
            if let Err(e) = rec {
                tessera_fuzz::bounded_error(&e);
                break;
            }
        }
    }
});
