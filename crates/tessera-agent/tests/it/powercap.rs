//! The powercap backend against fake sysfs trees in a temporary directory. Constraint
//! indices differ between the zones on purpose, so that selecting by name is proven.

use std::fs;
use std::path::Path;
use tempfile::TempDir;
use tessera_agent::powercap::{Constraint, Mode, Powercap, PowercapError};

/// Write `files` (name, content) into `root/dir`; contents get the trailing newline sysfs has.
fn zone(root: &Path, dir: &str, files: &[(&str, &str)]) {
    let dir = root.join(dir);
    fs::create_dir_all(&dir).unwrap();
    for (name, value) in files {
        fs::write(dir.join(name), format!("{value}\n")).unwrap();
    }
}

/// Two packages: package-0 (long_term at index 0, max 125 W) with subzones core and dram;
/// package-1 with short_term at index 0 and long_term at index 1 (min 10 W, max 125 W).
fn two_packages() -> TempDir {
    let tmp = TempDir::new().unwrap();
    let root = tmp.path();
    zone(root, "intel-rapl", &[("enabled", "1")]);
    zone(
        root,
        "intel-rapl:0",
        &[
            ("name", "package-0"),
            ("enabled", "1"),
            ("energy_uj", "123456789"),
            ("max_energy_range_uj", "262143328850"),
            ("constraint_0_name", "long_term"),
            ("constraint_0_power_limit_uw", "95000000"),
            ("constraint_0_time_window_us", "999424"),
            ("constraint_0_max_power_uw", "125000000"),
            ("constraint_1_name", "short_term"),
            ("constraint_1_power_limit_uw", "119000000"),
            ("constraint_1_time_window_us", "2440"),
            ("constraint_2_name", "peak_power"),
            ("constraint_2_power_limit_uw", "200000000"),
        ],
    );
    zone(
        root,
        "intel-rapl:0:0",
        &[
            ("name", "core"),
            ("enabled", "0"),
            ("energy_uj", "5555"),
            ("constraint_0_name", "long_term"),
            ("constraint_0_power_limit_uw", "0"),
            ("constraint_0_time_window_us", "976"),
        ],
    );
    zone(
        root,
        "intel-rapl:0:1",
        &[
            ("name", "dram"),
            ("enabled", "0"),
            ("constraint_0_name", "long_term"),
            ("constraint_0_power_limit_uw", "0"),
            ("constraint_0_time_window_us", "976"),
            ("constraint_0_max_power_uw", "0"),
        ],
    );
    zone(
        root,
        "intel-rapl:1",
        &[
            ("name", "package-1"),
            ("enabled", "1"),
            ("energy_uj", "42"),
            ("constraint_0_name", "short_term"),
            ("constraint_0_power_limit_uw", "150000000"),
            ("constraint_0_time_window_us", "2440"),
            ("constraint_1_name", "long_term"),
            ("constraint_1_power_limit_uw", "95000000"),
            ("constraint_1_time_window_us", "999424"),
            ("constraint_1_max_power_uw", "125000000"),
            ("constraint_1_min_power_uw", "10000000"),
        ],
    );
    tmp
}

fn read(root: &Path, file: &str) -> String {
    fs::read_to_string(root.join(file)).unwrap()
}

#[test]
fn lists_every_zone_in_numeric_order_with_its_constraints() {
    let tmp = two_packages();
    let zones = Powercap::new(tmp.path()).zones().unwrap();
    let ids: Vec<&str> = zones.iter().map(|z| z.id.as_str()).collect();
    assert_eq!(ids, ["intel-rapl:0", "intel-rapl:0:0", "intel-rapl:0:1", "intel-rapl:1"]);
    let names: Vec<&str> = zones.iter().map(|z| z.name.as_str()).collect();
    assert_eq!(names, ["package-0", "core", "dram", "package-1"]);
    assert_eq!(zones.iter().map(|z| z.enabled).collect::<Vec<_>>(), [true, false, false, true]);
    assert_eq!(zones.iter().map(|z| z.energy_uj).collect::<Vec<_>>(), [Some(123456789), Some(5555), None, Some(42)]);
    assert_eq!(
        zones[3].constraints,
        [
            Constraint {
                index: 0,
                name: "short_term".into(),
                power_limit_uw: 150_000_000,
                time_window_us: Some(2440),
                max_power_uw: None,
                min_power_uw: None,
            },
            Constraint {
                index: 1,
                name: "long_term".into(),
                power_limit_uw: 95_000_000,
                time_window_us: Some(999_424),
                max_power_uw: Some(125_000_000),
                min_power_uw: Some(10_000_000),
            },
        ]
    );
    let peak = zones[0].constraint("peak_power").unwrap();
    assert_eq!((peak.index, peak.power_limit_uw, peak.time_window_us), (2, 200_000_000, None));
    assert_eq!(zones[2].constraints[0].max_power_uw, None, "a max of 0 means not reported");
    assert!(zones[0].is_package() && zones[3].is_package());
    assert!(!zones[1].is_package() && !zones[2].is_package());
}

#[test]
fn set_limit_by_zone_name_writes_the_named_constraint_file() {
    let tmp = two_packages();
    let change = Powercap::new(tmp.path()).set_limit("package-1", "long_term", 60.0, Mode::Apply).unwrap();
    assert_eq!((change.zone_id.as_str(), change.zone_name.as_str()), ("intel-rapl:1", "package-1"));
    assert_eq!((change.constraint.as_str(), change.index), ("long_term", 1));
    assert_eq!(change.path, tmp.path().join("intel-rapl:1/constraint_1_power_limit_uw"));
    assert_eq!((change.old_uw, change.new_uw, change.applied), (95_000_000, 60_000_000, true));
    assert_eq!(read(tmp.path(), "intel-rapl:1/constraint_1_power_limit_uw"), "60000000\n");
    assert_eq!(read(tmp.path(), "intel-rapl:1/constraint_0_power_limit_uw"), "150000000\n");
    assert_eq!(read(tmp.path(), "intel-rapl:0/constraint_0_power_limit_uw"), "95000000\n");
}

#[test]
fn set_limit_by_zone_id_rounds_watts_to_micro_watts() {
    let tmp = two_packages();
    let change = Powercap::new(tmp.path()).set_limit("intel-rapl:0", "short_term", 62.500_000_4, Mode::Apply).unwrap();
    assert_eq!((change.index, change.new_uw), (1, 62_500_000));
    assert_eq!(read(tmp.path(), "intel-rapl:0/constraint_1_power_limit_uw"), "62500000\n");
}

#[test]
fn dry_run_writes_nothing_and_reports_the_plan() {
    let tmp = two_packages();
    let change = Powercap::new(tmp.path()).set_limit("package-0", "long_term", 80.0, Mode::DryRun).unwrap();
    assert_eq!((change.old_uw, change.new_uw, change.applied), (95_000_000, 80_000_000, false));
    assert_eq!(read(tmp.path(), "intel-rapl:0/constraint_0_power_limit_uw"), "95000000\n");
}

#[test]
fn a_limit_above_the_maximum_is_rejected_and_nothing_is_written() {
    let tmp = two_packages();
    let err = Powercap::new(tmp.path()).set_limit("package-1", "long_term", 130.0, Mode::Apply).unwrap_err();
    assert!(matches!(err, PowercapError::AboveMax { max_uw: 125_000_000, new_uw: 130_000_000, .. }), "{err:?}");
    let path = tmp.path().join("intel-rapl:1/constraint_1_power_limit_uw");
    assert_eq!(
        err.to_string(),
        format!("intel-rapl:1 long_term: 130.000 W is above the maximum of 125.000 W ({})", path.display())
    );
    assert_eq!(read(tmp.path(), "intel-rapl:1/constraint_1_power_limit_uw"), "95000000\n");
}

#[test]
fn a_limit_below_the_minimum_is_rejected() {
    let tmp = two_packages();
    let err = Powercap::new(tmp.path()).set_limit("intel-rapl:1", "long_term", 5.0, Mode::DryRun).unwrap_err();
    assert!(err.to_string().contains("5.000 W is below the minimum of 10.000 W"), "{err}");
}

#[test]
fn watts_that_are_not_a_positive_number_are_rejected() {
    let tmp = two_packages();
    let pc = Powercap::new(tmp.path());
    for watts in [0.0, -5.0, f64::NAN, f64::INFINITY] {
        let err = pc.set_limit("package-0", "long_term", watts, Mode::Apply).unwrap_err();
        assert!(matches!(err, PowercapError::InvalidWatts { .. }), "{watts}: {err:?}");
        let err = pc.cap_node(watts, "long_term", Mode::Apply).unwrap_err();
        assert!(matches!(err, PowercapError::InvalidWatts { .. }), "{watts}: {err:?}");
    }
    assert!(pc.set_limit("package-0", "long_term", -5.0, Mode::Apply).unwrap_err().to_string().contains("-5 W"));
}

#[test]
fn an_unknown_constraint_lists_the_zones_constraints() {
    let tmp = two_packages();
    let err = Powercap::new(tmp.path()).set_limit("package-1", "long-term", 60.0, Mode::Apply).unwrap_err();
    assert_eq!(
        err.to_string(),
        "zone intel-rapl:1 (package-1) has no constraint named \"long-term\"; its constraints: short_term, long_term"
    );
}

#[test]
fn an_unknown_zone_lists_ids_and_names() {
    let tmp = two_packages();
    let err = Powercap::new(tmp.path()).set_limit("package-2", "long_term", 60.0, Mode::Apply).unwrap_err();
    assert_eq!(
        err.to_string(),
        "no power zone \"package-2\" (by id or name); zones: intel-rapl:0 (package-0), intel-rapl:0:0 (core), \
         intel-rapl:0:1 (dram), intel-rapl:1 (package-1)"
    );
}

#[test]
fn a_malformed_value_names_the_file_and_what_was_expected() {
    let tmp = two_packages();
    zone(tmp.path(), "intel-rapl:1", &[("constraint_1_power_limit_uw", "abc")]);
    let err = Powercap::new(tmp.path()).zones().unwrap_err();
    let path = tmp.path().join("intel-rapl:1/constraint_1_power_limit_uw");
    assert_eq!(
        err.to_string(),
        format!("{}: expected an integer number of micro-watts, found \"abc\"", path.display())
    );
    zone(tmp.path(), "intel-rapl:1", &[("constraint_1_power_limit_uw", "1"), ("enabled", "yes")]);
    let err = Powercap::new(tmp.path()).zones().unwrap_err();
    assert!(err.to_string().ends_with("intel-rapl:1/enabled: expected 0 or 1, found \"yes\""), "{err}");
}

#[test]
fn no_powercap_tree_says_powercap_is_not_available() {
    let tmp = TempDir::new().unwrap();
    for root in [tmp.path().join("missing"), tmp.path().to_owned()] {
        let err = Powercap::new(&root).zones().unwrap_err();
        assert_eq!(
            err.to_string(),
            format!("powercap is not available: no power zones (intel-rapl:N) under {}", root.display())
        );
    }
}

#[test]
fn cap_node_splits_the_node_cap_evenly_over_the_packages() {
    let tmp = two_packages();
    let changes = Powercap::new(tmp.path()).cap_node(120.0, "long_term", Mode::Apply).unwrap();
    let got: Vec<(&str, u32, u64, u64, bool)> =
        changes.iter().map(|c| (c.zone_id.as_str(), c.index, c.old_uw, c.new_uw, c.applied)).collect();
    assert_eq!(
        got,
        [("intel-rapl:0", 0, 95_000_000, 60_000_000, true), ("intel-rapl:1", 1, 95_000_000, 60_000_000, true)]
    );
    assert_eq!(read(tmp.path(), "intel-rapl:0/constraint_0_power_limit_uw"), "60000000\n");
    assert_eq!(read(tmp.path(), "intel-rapl:1/constraint_1_power_limit_uw"), "60000000\n");
    assert_eq!(read(tmp.path(), "intel-rapl:1/constraint_0_power_limit_uw"), "150000000\n");
    assert_eq!(read(tmp.path(), "intel-rapl:0:1/constraint_0_power_limit_uw"), "0\n");
}

#[test]
fn cap_packages_validates_every_package_before_writing_any() {
    let tmp = two_packages();
    let pc = Powercap::new(tmp.path());
    // package-0 has no min, package-1 has a 10 W min: the second plan fails, the first is not written.
    let err = pc.cap_packages(8.0, "long_term", Mode::Apply).unwrap_err();
    assert!(matches!(err, PowercapError::BelowMin { ref zone_id, .. } if zone_id == "intel-rapl:1"), "{err:?}");
    assert_eq!(read(tmp.path(), "intel-rapl:0/constraint_0_power_limit_uw"), "95000000\n");
    let planned = pc.cap_packages(50.0, "long_term", Mode::DryRun).unwrap();
    assert!(planned.iter().all(|c| c.new_uw == 50_000_000 && !c.applied));
    assert_eq!(read(tmp.path(), "intel-rapl:0/constraint_0_power_limit_uw"), "95000000\n");
}

#[test]
fn cap_node_without_a_package_zone_is_an_error() {
    let tmp = TempDir::new().unwrap();
    zone(tmp.path(), "intel-rapl:0", &[("name", "psys"), ("enabled", "1")]);
    let err = Powercap::new(tmp.path()).cap_node(100.0, "long_term", Mode::DryRun).unwrap_err();
    assert_eq!(
        err.to_string(),
        format!(
            "no CPU package zone (intel-rapl:N named package-N) under {}; zones: intel-rapl:0 (psys)",
            tmp.path().display()
        )
    );
}

#[test]
fn mmio_zones_are_listed_but_are_not_packages_and_shared_names_are_ambiguous() {
    let tmp = two_packages();
    zone(
        tmp.path(),
        "intel-rapl-mmio:0",
        &[
            ("name", "package-0"),
            ("enabled", "1"),
            ("constraint_0_name", "long_term"),
            ("constraint_0_power_limit_uw", "95000000"),
        ],
    );
    let pc = Powercap::new(tmp.path());
    let zones = pc.zones().unwrap();
    assert_eq!(zones.last().map(|z| (z.id.as_str(), z.control_type())), Some(("intel-rapl-mmio:0", "intel-rapl-mmio")));
    assert_eq!(pc.cap_node(120.0, "long_term", Mode::DryRun).unwrap().len(), 2);
    let err = pc.set_limit("package-0", "long_term", 60.0, Mode::DryRun).unwrap_err();
    assert_eq!(
        err.to_string(),
        "zone name \"package-0\" matches several zones (intel-rapl:0, intel-rapl-mmio:0); select one by id"
    );
    assert_eq!(pc.zone("intel-rapl-mmio:0").unwrap().name, "package-0");
}

#[cfg(unix)]
#[test]
fn symlinked_zones_are_followed_as_in_real_sysfs() {
    let tmp = two_packages();
    let class = tmp.path().join("class");
    fs::create_dir(&class).unwrap();
    for id in ["intel-rapl", "intel-rapl:0", "intel-rapl:1"] {
        std::os::unix::fs::symlink(tmp.path().join(id), class.join(id)).unwrap();
    }
    let pc = Powercap::new(&class);
    let ids: Vec<String> = pc.zones().unwrap().into_iter().map(|z| z.id).collect();
    assert_eq!(ids, ["intel-rapl:0", "intel-rapl:1"]);
    let change = pc.set_limit("package-1", "long_term", 70.0, Mode::Apply).unwrap();
    assert_eq!(change.path, class.join("intel-rapl:1/constraint_1_power_limit_uw"));
    assert_eq!(read(tmp.path(), "intel-rapl:1/constraint_1_power_limit_uw"), "70000000\n");
}

#[cfg(unix)]
#[test]
fn a_read_only_limit_file_gives_a_permission_error_naming_it() {
    use std::os::unix::fs::PermissionsExt;
    let tmp = two_packages();
    let path = tmp.path().join("intel-rapl:0/constraint_0_power_limit_uw");
    fs::set_permissions(&path, fs::Permissions::from_mode(0o444)).unwrap();
    if fs::OpenOptions::new().write(true).open(&path).is_ok() {
        eprintln!("skipped: running as root, file permissions are not enforced");
        return;
    }
    let err = Powercap::new(tmp.path()).set_limit("package-0", "long_term", 60.0, Mode::Apply).unwrap_err();
    assert_eq!(
        err.to_string(),
        format!(
            "{}: permission denied writing the power limit; run as root (or the firmware has locked this limit)",
            path.display()
        )
    );
}

/// A real node's power domain on the fake tree: the cap is split over the
/// packages' `long_term` constraints and read back; the energy counters give
/// the energy and power, a counter that wrapped counted across the wrap; a
/// cap outside the hardware's range is refused with nothing written.
#[test]
fn a_rapl_domain_sets_the_node_cap_and_reads_energy_across_a_wrap() {
    use tessera_agent::power::{Domain, Source};
    let tmp = two_packages();
    let root = tmp.path();
    let mut d = Domain::new("node1".into(), Source::Rapl(Powercap::new(root)), None);
    assert_eq!(d.error, None);
    assert_eq!(d.set(180.0, true), Ok(180.0), "90 W per package");
    assert_eq!(fs::read_to_string(root.join("intel-rapl:0/constraint_0_power_limit_uw")).unwrap().trim(), "90000000");
    assert_eq!(fs::read_to_string(root.join("intel-rapl:1/constraint_1_power_limit_uw")).unwrap().trim(), "90000000");
    // 10 J on package-0; package-1 wraps at its range (1,000,000 µJ): from
    // 0.9 J to 0.5 J after the wrap is 0.1 + 0.5 J
    fs::write(root.join("intel-rapl:1/max_energy_range_uj"), "1000000\n").unwrap();
    fs::write(root.join("intel-rapl:1/energy_uj"), "900000\n").unwrap();
    let mut d = Domain::new("node1".into(), Source::Rapl(Powercap::new(root)), Some(180.0));
    std::thread::sleep(std::time::Duration::from_millis(50));
    fs::write(root.join("intel-rapl:0/energy_uj"), format!("{}\n", 123456789 + 10_000_000)).unwrap();
    fs::write(root.join("intel-rapl:1/energy_uj"), "500000\n").unwrap();
    let r = d.read();
    assert!((r.energy_j - (10.0 + 0.1 + 0.5)).abs() < 1e-6, "{r:?}");
    assert!(r.measured && r.watts > 0.0 && r.error.is_none(), "{r:?}");
    assert_eq!(r.cap_w, Some(180.0));
    // above the packages' maximum (125 W each): refused, nothing written
    let e = d.set(300.0, true).unwrap_err();
    assert!(e.contains("above the maximum"), "{e}");
    assert_eq!(fs::read_to_string(root.join("intel-rapl:0/constraint_0_power_limit_uw")).unwrap().trim(), "90000000");
    // a node without packages cannot be capped, and says why
    let empty = TempDir::new().unwrap();
    let mut none = Domain::new("node2".into(), Source::Rapl(Powercap::new(empty.path())), None);
    assert!(none.read().error.is_some_and(|e| e.contains("no power zones")), "{:?}", none.read());
    assert!(none.set(100.0, true).is_err());
}
