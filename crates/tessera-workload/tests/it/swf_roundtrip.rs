//! Writing and reading SWF, and what malformed input produces.

use proptest::prelude::*;
use std::io::Write;
use tessera_workload::swf::{from_reader, read_all, SwfHeader, SwfRecord, SwfWriter};

const SAMPLE: &str = "\
; Version: 2.2
; MaxProcs: 16
; Note: a sample
1 0 5 100 4 90.5 -1 4 200 -1 1 1 1 -1 1 -1 -1 -1
2 10 -1 50 2 -1 -1 -1 -1 -1 1 2 1 -1 1 -1 -1 -1
";

fn write(header: &SwfHeader, records: &[SwfRecord]) -> String {
    let mut w = SwfWriter::new(Vec::new());
    w.write_header(header).unwrap();
    for r in records {
        w.write_record(r).unwrap();
    }
    String::from_utf8(w.into_inner()).unwrap()
}

#[test]
fn round_trip_keeps_header_lines_and_every_field() {
    let (h, recs, report) = read_all(from_reader(SAMPLE.as_bytes(), "sample.swf")).unwrap();
    assert_eq!(report.skipped, 0);
    assert_eq!(recs.len(), 2);
    assert_eq!(recs[0].avg_cpu_time, 90.5);
    let text = write(&h, &recs);
    assert!(text.starts_with("; Version: 2.2\n; MaxProcs: 16\n; Note: a sample\n"));
    let (h2, recs2, _) = read_all(from_reader(text.as_bytes(), "again.swf")).unwrap();
    assert_eq!(h2, h);
    assert_eq!(recs2, recs);
}

#[test]
fn gzip_input_is_detected_by_content() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("t.swf"); // no .gz suffix on purpose
    let mut gz = flate2::write::GzEncoder::new(std::fs::File::create(&path).unwrap(), flate2::Compression::fast());
    gz.write_all(SAMPLE.as_bytes()).unwrap();
    gz.finish().unwrap();
    let (h, recs, _) = tessera_workload::swf::SwfReader::read_file(&path, false).unwrap();
    assert_eq!(h.max_procs, Some(16));
    assert_eq!(recs.len(), 2);
}

#[test]
fn malformed_line_names_file_line_field_and_value() {
    let bad = SAMPLE.replace("2 10 -1 50", "2 10 -1 5x0");
    let err = read_all(from_reader(bad.as_bytes(), "bad.swf")).unwrap_err().to_string();
    assert_eq!(err, "bad.swf:5: field 4 (run time) is `5x0`: expected an integer (-1 if unknown)");

    let bad = SAMPLE.replace("1 0 5 100 4 90.5", "1 0 5 100 4 ninety");
    let err = read_all(from_reader(bad.as_bytes(), "bad.swf")).unwrap_err().to_string();
    assert_eq!(err, "bad.swf:4: field 6 (average CPU time used) is `ninety`: expected a number (-1 if unknown)");

    let bad = SAMPLE.replace(" -1 -1 -1\n2", " -1 -1\n2");
    let err = read_all(from_reader(bad.as_bytes(), "bad.swf")).unwrap_err().to_string();
    assert_eq!(err, "bad.swf:4: expected 18 fields, found 17");
}

#[test]
fn lenient_mode_skips_and_counts_by_reason() {
    let bad = format!("{SAMPLE}3 x 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1\n4 1 1\n5 y 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1\n6 20 -1 5 1 -1 -1 1 9 -1 1 1 1 -1 1 -1 -1 -1\n");
    let (_, recs, report) = read_all(from_reader(bad.as_bytes(), "bad.swf").lenient(true)).unwrap();
    assert_eq!(recs.iter().map(|r| r.job_number).collect::<Vec<_>>(), vec![1, 2, 6]);
    assert_eq!(report.skipped, 3);
    assert_eq!(report.by_reason["field 2 (submit time) an integer (-1 if unknown)"], (2, 6));
    assert_eq!(report.by_reason["expected 18 fields, found 3"], (1, 7));
    assert!(report.to_string().starts_with("3 malformed line(s) skipped"));
}

fn arb_record() -> impl Strategy<Value = SwfRecord> {
    (prop::array::uniform16(-1i64..1_000_000), -1.0f64..1e6, -1i64..100).prop_map(|(v, cpu, q)| SwfRecord {
        job_number: v[0],
        submit_time: v[1],
        wait_time: v[2],
        run_time: v[3],
        allocated_procs: v[4],
        avg_cpu_time: (cpu * 100.0).round() / 100.0,
        used_memory: v[5] as f64,
        requested_procs: v[6],
        requested_time: v[7],
        requested_memory: v[8],
        status: v[9],
        user_id: v[10],
        group_id: v[11],
        executable: v[12],
        queue: q,
        partition: v[13],
        preceding_job: v[14],
        think_time: v[15],
    })
}

proptest! {
    #[test]
    // a trace names a job once (only the partial-execution lines, status 2 to 4,
    // repeat a number), so the records the reader must accept are filtered to that
    fn any_records_round_trip(recs in prop::collection::vec(arb_record(), 0..50).prop_filter("one line per job number", |recs| {
        let mut seen = std::collections::HashSet::new();
        recs.iter().filter(|r| r.job_number >= 0 && !(2..=4).contains(&r.status)).all(|r| seen.insert(r.job_number))
    })) {
        let mut h = SwfHeader::default();
        h.add_line("; MaxProcs: 64").unwrap();
        let text = write(&h, &recs);
        let (h2, back, _) = read_all(from_reader(text.as_bytes(), "p.swf")).unwrap();
        prop_assert_eq!(h2, h);
        prop_assert_eq!(back, recs);
    }
}
