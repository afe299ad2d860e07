//! Every shared real trace parses strictly, with the job counts and header facts
//! recorded in ../shared/traces/SOURCES.md.

use tessera_workload::swf::SwfReader;
use tessera_workload::traces::{all_shared, shared_dir_or_skip};

/// (file, data lines, MaxProcs or MaxNodes as the default machine size)
const KNOWN: &[(&str, usize, Option<u64>)] = &[
    ("ALCF-Theta-2022-cqsimplus.swf.gz", 23911, Some(4360)),
    ("CEA-Curie-2011-2.1-cln.swf.gz", 312826, Some(93312)),
    ("CTC-SP2-1996-3.1-cln.swf.gz", 77222, Some(338)),
    ("HPC2N-2002-2.2-cln.swf.gz", 202871, Some(240)),
    ("KTH-SP2-1996-2.1-cln.swf.gz", 28476, Some(100)),
    ("LANL-CM5-1994-4.1-cln.swf.gz", 122060, Some(1024)),
    ("LLNL-Atlas-2006-2.1-cln.swf.gz", 43778, Some(9216)),
    ("LLNL-Thunder-2007-1.1-cln.swf.gz", 121039, Some(4008)),
    ("LPC-EGEE-2004-1.2-cln.swf.gz", 234889, Some(140)),
    ("Lublin-256-synthetic-aaroh.swf.gz", 10000, Some(256)),
    ("Lublin-256-synthetic.swf.gz", 10000, Some(256)),
    ("METACENTRUM-2009-2.swf.gz", 103656, None),
    ("NASA-iPSC-1993-3.1-cln.swf.gz", 18239, Some(128)),
    ("OSC-Clust-2000-3.1-cln.swf.gz", 36097, Some(178)),
    ("RICC-2010-2.swf.gz", 447794, Some(8192)),
    ("SDSC-BLUE-2000-4.2-cln.swf.gz", 243306, Some(1152)),
    ("SDSC-DS-2004-2.1-cln.swf.gz", 96069, Some(1664)),
    ("SDSC-Par-1996-3.1-cln.swf.gz", 32135, Some(400)),
    ("SDSC-SP2-1998-4.2-cln.swf.gz", 59715, Some(128)),
    ("Sandia-Ross-2001-1.1-cln.swf.gz", 57882, Some(1524)),
];

#[test]
fn every_shared_trace_parses_strictly() {
    let Some(dir) = shared_dir_or_skip("every_shared_trace_parses_strictly") else { return };
    let files = all_shared(&dir);
    assert!(!files.is_empty(), "no traces in {}", dir.display());
    for path in files {
        let name = path.file_name().unwrap().to_str().unwrap().to_string();
        let mut reader = SwfReader::open(&path).unwrap();
        let header = reader.header().unwrap().clone();
        let mut n = 0usize;
        let mut last_submit = i64::MIN;
        let mut unsorted = 0usize;
        for r in reader.by_ref() {
            let r = r.unwrap_or_else(|e| panic!("{e}"));
            if r.submit_time < last_submit {
                unsorted += 1;
            }
            last_submit = r.submit_time;
            n += 1;
        }
        if let Some(&(_, jobs, size)) = KNOWN.iter().find(|k| k.0 == name) {
            assert_eq!(n, jobs, "{name}: job count");
            assert_eq!(header.machine_size(), size, "{name}: machine size");
        } else {
            assert!(n > 0, "{name}: no jobs");
        }
        eprintln!("{name}: {n} jobs, {} header lines, {unsorted} out-of-order submits", header.lines.len());
    }
}

#[test]
fn header_fields_of_hpc2n() {
    let Some(dir) = shared_dir_or_skip("header_fields_of_hpc2n") else { return };
    let mut reader = SwfReader::open(&dir.join("HPC2N-2002-2.2-cln.swf.gz")).unwrap();
    let h = reader.header().unwrap();
    assert_eq!(h.version.as_deref(), Some("2.2"));
    assert_eq!(h.unix_start_time, Some(1027839845));
    assert_eq!(h.time_zone_string.as_deref(), Some("Europe/Stockholm"));
    assert_eq!(h.max_nodes, Some(240));
    assert_eq!(h.max_procs, Some(240));
    assert_eq!(h.max_records, Some(202871));
    assert_eq!(h.acknowledge.as_deref(), Some("Ake Sandgren"));
    assert_eq!(h.notes, vec!["uses MAUI scheduler", "THIS IS A CLEANED VERSION OF THE LOG!"]);
    let first = reader.next().unwrap().unwrap();
    assert_eq!((first.job_number, first.submit_time, first.run_time, first.allocated_procs), (11, 342072, 43306, 32));
    assert_eq!(first.avg_cpu_time, 43307.0);
    let second = reader.next().unwrap().unwrap();
    assert_eq!(second.avg_cpu_time, 552.21);
}
