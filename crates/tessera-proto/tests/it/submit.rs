//! `tessera job submit`'s option syntax, with sbatch(1)'s own examples.

use tessera_proto::submit::*;

#[test]
fn time_limits_take_every_slurm_form() {
    let cases = [
        ("60", 3600),                       // minutes
        ("30:30", 30 * 60 + 30),            // minutes:seconds
        ("03:00:00", 3 * 3600),             // hours:minutes:seconds
        ("4:30:30", 4 * 3600 + 30 * 60 + 30),
        ("4-12", 4 * 86_400 + 12 * 3600),   // days-hours
        ("4-12:15", 4 * 86_400 + 12 * 3600 + 15 * 60),
        ("4-12:15:30", 4 * 86_400 + 12 * 3600 + 15 * 60 + 30),
        ("2-02:30:00", 2 * 86_400 + 2 * 3600 + 30 * 60),
        ("365-0", MAX_LIMIT_S),
    ];
    for (s, want) in cases {
        assert_eq!(parse_time_limit("--time", s), Ok(Some(want)), "{s}");
    }
    for s in ["0", "UNLIMITED", "infinite", "0:00:00"] {
        assert_eq!(parse_time_limit("--time", s), Ok(None), "{s}");
    }
}

#[test]
fn bad_time_limits_name_the_option_and_the_forms() {
    for s in ["", "abc", "-5", "1-2-3", "1:2:3:4", "1:60:00", "10:75", "1-", "-1", "366-0", "99999999999", "1.5", "1:2:3-4"] {
        let e = parse_time_limit("-t", s).expect_err(s);
        assert_eq!(e.option, "-t");
        assert_eq!(e.value, s);
        assert!(e.expected.contains("days-hours:minutes:seconds"), "{e}");
    }
}

#[test]
fn memory_sizes_are_mebibytes() {
    for (s, want) in [("512", 512), ("512M", 512), ("4G", 4096), ("4g", 4096), ("4GB", 4096), ("1T", 1 << 20), ("100K", 1), ("2048K", 2)] {
        assert_eq!(parse_mem_mib("--mem", s), Ok(want), "{s}");
    }
    for s in ["", "0", "4X", "-1", "G", "1.5G", "2000T", "4 G"] {
        let e = parse_mem_mib("--mem", s).expect_err(s);
        assert!(e.to_string().starts_with("--mem"), "{e}");
        assert!(e.expected.contains("4G"), "{e}");
    }
}

#[test]
fn arrays_expand_ranges_steps_and_limits() {
    let a = parse_array("--array", "0-15%4").unwrap();
    assert_eq!(a.indices, (0..=15).collect::<Vec<_>>());
    assert_eq!(a.max_running, Some(4));
    let a = parse_array("--array", "1,3,5-9:2,3").unwrap();
    assert_eq!(a.indices, [1, 3, 5, 7, 9]);
    assert_eq!(a.max_running, None);
    for s in ["", "5-1", "0-15%0", "1:2", "a", "0-20000", "1,,2", "0-4000001", "0-3:0"] {
        let e = parse_array("--array", s).expect_err(s);
        assert_eq!(e.option, "--array");
        assert!(e.expected.contains("0-15"), "{e}");
    }
}

#[test]
fn dependencies_list_every_condition() {
    use tessera_proto::api::JobRef::{Id, Task};
    assert_eq!(
        parse_dependency("--dependency", "afterok:12:13,afterany:14").unwrap().after,
        [(DependencyKind::AfterOk, Id(12)), (DependencyKind::AfterOk, Id(13)), (DependencyKind::AfterAny, Id(14))]
    );
    assert_eq!(parse_dependency("-d", "afternotok:7").unwrap().after, [(DependencyKind::AfterNotOk, Id(7))]);
    // an array task, as Slurm names it
    let d = parse_dependency("-d", "singleton,afterany:4").unwrap();
    assert!(d.singleton && d.after == [(DependencyKind::AfterAny, Id(4))], "{d:?}");
    assert_eq!(parse_dependency("-d", "afterok:7_3:8").unwrap().after, [(DependencyKind::AfterOk, Task(7, 3)), (DependencyKind::AfterOk, Id(8))]);
    for s in ["", "afterok", "afterok:", "afterok:0", "afterok:x", "before:3", "afterok:+3", "afterok:3,", "afterok:0_1", "afterok:7_", "afterok:7_x", "afterok:_3"] {
        let e = parse_dependency("--dependency", s).expect_err(s);
        assert!(e.expected.contains("afterok:ID"), "{e}");
    }
}

#[test]
fn directives_are_read_up_to_the_first_command() {
    let script = "#!/bin/bash\n\
                  #SBATCH -J hello\n\
                  #SBATCH --time=1:00:00   # an hour\n\
                  \n\
                  # an ordinary comment\n\
                  #SBATCH --mem 4G\n\
                  #SBATCH -n4\n\
                  #SBATCH --requeue\n\
                  #SBATCH --output=\"out-%j.txt\"\n\
                  echo hello\n\
                  #SBATCH -n 64\n";
    let d = directives(script).unwrap();
    let got: Vec<(usize, &str, &str)> = d.iter().map(|(l, o, v)| (*l, o.as_str(), v.as_str())).collect();
    assert_eq!(
        got,
        [
            (2, "-J", "hello"),
            (3, "--time", "1:00:00"),
            (6, "--mem", "4G"),
            (7, "-n", "4"),
            (8, "--requeue", ""),
            (9, "--output", "out-%j.txt"),
        ]
    );
}

#[test]
fn a_directive_line_may_hold_several_options_split_as_sbatch_does() {
    let script = "#!/bin/sh\n\
                  #SBATCH -N 2 -n16 --hold -J 'two words' --time=5 # a comment -n 3\n\
                  #SBATCH --output \"a b-%j.out\" --requeue -t\n\
                  hostname\n";
    let d = directives(script).unwrap();
    let got: Vec<(usize, &str, &str)> = d.iter().map(|(l, o, v)| (*l, o.as_str(), v.as_str())).collect();
    assert_eq!(
        got,
        [
            (2, "-N", "2"),
            (2, "-n", "16"),
            (2, "--hold", ""),
            (2, "-J", "two words"),
            (2, "--time", "5"),
            (3, "--output", "a b-%j.out"),
            (3, "--requeue", ""),
            // a value missing at the end of the line: left for the submission
            // check, which names the option
            (3, "-t", ""),
        ]
    );
    // a stray word and an unclosed quote name their line and the word
    let e = directives("#!/bin/sh\n#SBATCH -J my job\n").unwrap_err();
    assert_eq!((e.line, e.value.as_str()), (Some(2), "job"));
    let e = directives("#!/bin/sh\n\n#SBATCH -J 'my job\n").unwrap_err();
    assert_eq!((e.line, e.value.as_str(), e.expected.as_str()), (Some(3), "'my job", "a closing quote"));
}

#[test]
fn a_directive_that_is_not_an_option_names_its_line() {
    let e = directives("#!/bin/sh\n#SBATCH\n").unwrap_err();
    assert_eq!(e.line, Some(2));
    let e = directives("#!/bin/sh\n#SBATCH -n 2\n#SBATCH time=5\n").unwrap_err();
    assert_eq!(e.line, Some(3));
    assert!(e.to_string().starts_with("line 3: #SBATCH"), "{e}");
}

/// A script saved with a UTF-8 byte-order mark (EF BB BF, as some Windows
/// editors write) had every `#SBATCH` line ignored without a word: the mark
/// made the first line no `#!` and no comment, so reading stopped there.
#[test]
fn a_byte_order_mark_does_not_hide_the_directives() {
    let script = "\u{feff}#!/bin/bash\n#SBATCH -J marked\n#SBATCH -n 4\nhostname\n";
    assert!(script.as_bytes().starts_with(&[0xef, 0xbb, 0xbf]));
    let d = directives(script).unwrap();
    let got: Vec<(usize, &str, &str)> = d.iter().map(|(l, o, v)| (*l, o.as_str(), v.as_str())).collect();
    assert_eq!(got, [(2, "-J", "marked"), (3, "-n", "4")], "line numbers as in the file");
    // a directive on the first line, right after the mark
    let d = directives("\u{feff}#SBATCH --time=5\necho\n").unwrap();
    assert_eq!(d, [(1, "--time".to_string(), "5".to_string())]);
    // the script a node runs starts with `#!`, as the kernel needs
    assert_eq!(without_bom(script), &script[3..]);
    assert!(without_bom(script).starts_with("#!/bin/bash\n"));
    assert_eq!(without_bom("#!/bin/sh\n"), "#!/bin/sh\n");
    // only a leading mark is one: elsewhere U+FEFF is text
    assert_eq!(without_bom("#!/bin/sh\n\u{feff}"), "#!/bin/sh\n\u{feff}");
}
