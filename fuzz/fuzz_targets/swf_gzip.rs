//! A trace as it comes from a file: gzip detected by its magic bytes, then SWF.
//! The corpus holds gzip-compressed traces, so mutations reach the decoder.
#![no_main]
use libfuzzer_sys::fuzz_target;
use tessera_workload::swf::SwfReader;

fuzz_target!(|data: &[u8]| {
    let r = match SwfReader::sniff(std::io::Cursor::new(data.to_vec()), "fuzz.swf.gz") {
        Ok(r) => r,
        Err(e) => return tessera_fuzz::bounded_error(&e),
    };
    // at most 10,000 records: a small input may inflate a great deal
    for rec in r.take(10_000) {
        if let Err(e) = rec {
            tessera_fuzz::bounded_error(&e);
            break;
        }
    }
});
