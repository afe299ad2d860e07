//! CPU power caps through the Linux power capping framework.
//!
//! The scheduler decides a CPU cap per node, in watts; the node agent enforces it by
//! writing RAPL power limits under `/sys/class/powercap`. Kernel documentation:
//! <https://docs.kernel.org/power/powercap/powercap.html> and
//! `Documentation/ABI/testing/sysfs-class-powercap`.
//!
//! Every power zone is a directory named `<control type>:<n>[:<m>...]` (`intel-rapl:0`, its
//! subzone `intel-rapl:0:1`, `intel-rapl-mmio:0`), a symlink in real sysfs, holding `name`,
//! `enabled`, `energy_uj` and numbered constraints `constraint_K_name`,
//! `constraint_K_power_limit_uw`, `constraint_K_time_window_us` and, optionally,
//! `constraint_K_max_power_uw` and `constraint_K_min_power_uw`. Which index holds which
//! constraint differs between zones and CPU generations, so constraints are always selected
//! by name (`long_term`, `short_term`, `peak_power`), never by index.
//!
//! The root is a parameter so that tests run against a fake tree in a temporary directory.

use serde::Serialize;
use std::fs;
use std::io::{self, Write};
use std::path::{Path, PathBuf};

/// Where the kernel exposes the powercap class.
pub const DEFAULT_ROOT: &str = "/sys/class/powercap";

const UW: &str = "an integer number of micro-watts";
const US: &str = "an integer number of micro-seconds";
const UJ: &str = "an integer number of micro-joules";
/// Linux errno values by which sysfs says an attribute has no value for this zone.
const ENODATA: i32 = 61;
const EOPNOTSUPP: i32 = 95;

/// One power zone (a directory under the root).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Zone {
    /// The directory name, e.g. `intel-rapl:0:1`.
    pub id: String,
    /// The zone's `name`, e.g. `package-0`, `core`, `dram`, `psys`.
    pub name: String,
    pub enabled: bool,
    /// `None` when absent or unreadable (`energy_uj` is readable by root only on recent kernels).
    pub energy_uj: Option<u64>,
    /// Where `energy_uj` wraps to 0 (`max_energy_range_uj`), when given.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_energy_range_uj: Option<u64>,
    /// Sorted by index.
    pub constraints: Vec<Constraint>,
}

/// One `constraint_K_*` group of a zone.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Constraint {
    pub index: u32,
    pub name: String,
    pub power_limit_uw: u64,
    pub time_window_us: Option<u64>,
    /// `None` when absent, unreadable, or 0 (which zones such as `dram` report for "unknown").
    pub max_power_uw: Option<u64>,
    pub min_power_uw: Option<u64>,
}

impl Zone {
    /// The control type: the id up to its first `:` (`intel-rapl`, `intel-rapl-mmio`).
    pub fn control_type(&self) -> &str {
        self.id.split(':').next().unwrap_or_default()
    }

    /// A CPU package (or die) zone: a top-level `intel-rapl:N` zone named `package-…`.
    /// `psys` zones and the `intel-rapl-mmio` duplicates of package zones are not packages.
    pub fn is_package(&self) -> bool {
        self.control_type() == "intel-rapl" && self.id.matches(':').count() == 1 && self.name.starts_with("package-")
    }

    pub fn constraint(&self, name: &str) -> Option<&Constraint> {
        self.constraints.iter().find(|c| c.name == name)
    }
}

/// Whether a change is written or only planned.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    Apply,
    DryRun,
}

/// A power limit change, planned or applied.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Change {
    pub zone_id: String,
    pub zone_name: String,
    pub constraint: String,
    pub index: u32,
    /// The `constraint_K_power_limit_uw` file.
    pub path: PathBuf,
    pub old_uw: u64,
    pub new_uw: u64,
    /// False in dry-run mode: nothing was written.
    pub applied: bool,
    /// Applied: the limit read back, which RAPL may have rounded to its power unit
    /// (1/2^k W, so less than 1 W away from `new_uw`).
    pub in_force_uw: Option<u64>,
}

#[derive(Debug, thiserror::Error)]
pub enum PowercapError {
    #[error("powercap is not available: no power zones (intel-rapl:N) under {}", root.display())]
    NotAvailable { root: PathBuf },
    #[error("cannot read {}", path.display())]
    Read { path: PathBuf, source: io::Error },
    #[error("cannot write {}", path.display())]
    Write { path: PathBuf, source: io::Error },
    #[error(
        "{}: permission denied writing the power limit; run as root (or the firmware has locked this limit)",
        path.display()
    )]
    PermissionDenied { path: PathBuf },
    #[error("{}: expected {expected}, found {found:?}", path.display())]
    Malformed { path: PathBuf, expected: &'static str, found: String },
    #[error("no power zone {selector:?} (by id or name); zones: {known}")]
    UnknownZone { selector: String, known: String },
    #[error("zone name {selector:?} matches several zones ({ids}); select one by id")]
    AmbiguousZone { selector: String, ids: String },
    #[error("zone {zone_id} ({zone_name}) has no constraint named {constraint:?}; its constraints: {known}")]
    UnknownConstraint { zone_id: String, zone_name: String, constraint: String, known: String },
    #[error("invalid power limit {watts} W: expected a finite number of watts greater than 0")]
    InvalidWatts { watts: f64 },
    #[error("{zone_id} {constraint}: {} W is above the maximum of {} W ({})", w(.new_uw), w(.max_uw), path.display())]
    AboveMax { zone_id: String, constraint: String, new_uw: u64, max_uw: u64, path: PathBuf },
    #[error("{zone_id} {constraint}: {} W is below the minimum of {} W ({})", w(.new_uw), w(.min_uw), path.display())]
    BelowMin { zone_id: String, constraint: String, new_uw: u64, min_uw: u64, path: PathBuf },
    #[error(
        "{}: wrote {written_uw} µW but read back {read_uw} µW (the kernel clamped or rounded it); {read_uw} µW is in force",
        path.display()
    )]
    ReadBack { path: PathBuf, written_uw: u64, read_uw: u64 },
    #[error("no CPU package zone (intel-rapl:N named package-N) under {}; zones: {known}", root.display())]
    NoPackages { root: PathBuf, known: String },
}

fn w(uw: &u64) -> String {
    format!("{:.3}", *uw as f64 / 1e6)
}

/// Watts to micro-watts, rounded to the nearest integer; `None` unless the result is a
/// positive number of micro-watts that fits in a `u64`.
pub fn watts_to_uw(watts: f64) -> Option<u64> {
    if !watts.is_finite() || watts <= 0.0 {
        return None;
    }
    let uw = (watts * 1e6).round();
    (uw >= 1.0 && uw < u64::MAX as f64).then_some(uw as u64)
}

/// The powercap class directory of one machine.
#[derive(Debug, Clone)]
pub struct Powercap {
    root: PathBuf,
}

impl Powercap {
    pub fn new(root: impl Into<PathBuf>) -> Self {
        Powercap { root: root.into() }
    }

    /// The real sysfs tree, [`DEFAULT_ROOT`].
    pub fn system() -> Self {
        Powercap::new(DEFAULT_ROOT)
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Every zone of every control type, sorted by control type then numerically by index
    /// (`intel-rapl:0` < `intel-rapl:0:0` < `intel-rapl:1` < `intel-rapl:10`).
    pub fn zones(&self) -> Result<Vec<Zone>, PowercapError> {
        let entries = match fs::read_dir(&self.root) {
            Ok(entries) => entries,
            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                return Err(PowercapError::NotAvailable { root: self.root.clone() })
            }
            Err(source) => return Err(PowercapError::Read { path: self.root.clone(), source }),
        };
        let mut ids = Vec::new();
        for entry in entries {
            let entry = entry.map_err(|source| PowercapError::Read { path: self.root.clone(), source })?;
            let Ok(id) = entry.file_name().into_string() else { continue };
            // `is_dir` follows symlinks, as real sysfs zone entries are.
            if let Some(key) = sort_key(&id) {
                if entry.path().is_dir() {
                    ids.push((key, id));
                }
            }
        }
        if ids.is_empty() {
            return Err(PowercapError::NotAvailable { root: self.root.clone() });
        }
        ids.sort();
        ids.into_iter().map(|(_, id)| self.read_zone(id)).collect()
    }

    /// One zone, by id (`intel-rapl:0`) or by name (`package-0`, `dram`); a name shared by
    /// several zones (`dram` on a two-socket node) is an error listing their ids.
    pub fn zone(&self, selector: &str) -> Result<Zone, PowercapError> {
        Ok(select(&self.zones()?, selector)?.clone())
    }

    /// Set the constraint named `constraint` of one zone to `watts`. In [`Mode::Apply`] the
    /// value is written and read back; in [`Mode::DryRun`] nothing is written.
    pub fn set_limit(&self, zone: &str, constraint: &str, watts: f64, mode: Mode) -> Result<Change, PowercapError> {
        let zones = self.zones()?;
        let mut change = self.plan(select(&zones, zone)?, constraint, watts)?;
        if mode == Mode::Apply {
            apply(&mut change)?;
        }
        Ok(change)
    }

    /// Set the constraint named `constraint` of every CPU package zone ([`Zone::is_package`])
    /// to `watts_per_package`. Every change is validated before the first is written.
    pub fn cap_packages(
        &self,
        watts_per_package: f64,
        constraint: &str,
        mode: Mode,
    ) -> Result<Vec<Change>, PowercapError> {
        let zones = self.zones()?;
        self.cap(&zones, watts_per_package, constraint, mode)
    }

    /// Apply a node's CPU cap: `watts_per_node` is split evenly over the node's CPU packages,
    /// as [`Powercap::cap_packages`] then sets each. An error when the node has no package zone.
    pub fn cap_node(&self, watts_per_node: f64, constraint: &str, mode: Mode) -> Result<Vec<Change>, PowercapError> {
        if watts_to_uw(watts_per_node).is_none() {
            return Err(PowercapError::InvalidWatts { watts: watts_per_node });
        }
        let zones = self.zones()?;
        let packages = zones.iter().filter(|z| z.is_package()).count();
        self.cap(&zones, watts_per_node / packages.max(1) as f64, constraint, mode)
    }

    fn cap(&self, zones: &[Zone], watts: f64, constraint: &str, mode: Mode) -> Result<Vec<Change>, PowercapError> {
        let packages: Vec<&Zone> = zones.iter().filter(|z| z.is_package()).collect();
        if packages.is_empty() {
            return Err(PowercapError::NoPackages { root: self.root.clone(), known: known_zones(zones) });
        }
        let mut changes =
            packages.into_iter().map(|z| self.plan(z, constraint, watts)).collect::<Result<Vec<_>, _>>()?;
        if mode == Mode::Apply {
            changes.iter_mut().try_for_each(apply)?;
        }
        Ok(changes)
    }

    fn plan(&self, zone: &Zone, constraint: &str, watts: f64) -> Result<Change, PowercapError> {
        let new_uw = watts_to_uw(watts).ok_or(PowercapError::InvalidWatts { watts })?;
        let c = zone.constraint(constraint).ok_or_else(|| PowercapError::UnknownConstraint {
            zone_id: zone.id.clone(),
            zone_name: zone.name.clone(),
            constraint: constraint.to_owned(),
            known: list(zone.constraints.iter().map(|c| c.name.clone())),
        })?;
        let path = self.root.join(&zone.id).join(format!("constraint_{}_power_limit_uw", c.index));
        if let Some(max_uw) = c.max_power_uw.filter(|&max| new_uw > max) {
            let (zone_id, constraint) = (zone.id.clone(), c.name.clone());
            return Err(PowercapError::AboveMax { zone_id, constraint, new_uw, max_uw, path });
        }
        if let Some(min_uw) = c.min_power_uw.filter(|&min| new_uw < min) {
            let (zone_id, constraint) = (zone.id.clone(), c.name.clone());
            return Err(PowercapError::BelowMin { zone_id, constraint, new_uw, min_uw, path });
        }
        Ok(Change {
            zone_id: zone.id.clone(),
            zone_name: zone.name.clone(),
            constraint: c.name.clone(),
            index: c.index,
            path,
            old_uw: c.power_limit_uw,
            new_uw,
            applied: false,
            in_force_uw: None,
        })
    }

    fn read_zone(&self, id: String) -> Result<Zone, PowercapError> {
        let dir = self.root.join(&id);
        let name = read_text(&dir.join("name"))?.trim().to_owned();
        let path = dir.join("enabled");
        let enabled = match read_text(&path)?.trim() {
            "0" => false,
            "1" => true,
            other => return Err(PowercapError::Malformed { path, expected: "0 or 1", found: other.to_owned() }),
        };
        let energy_uj = read_opt_u64(&dir.join("energy_uj"), UJ)?;
        let max_energy_range_uj = read_opt_u64(&dir.join("max_energy_range_uj"), UJ)?.filter(|&v| v > 0);
        let mut indices = Vec::new();
        for entry in fs::read_dir(&dir).map_err(|source| PowercapError::Read { path: dir.clone(), source })? {
            let entry = entry.map_err(|source| PowercapError::Read { path: dir.clone(), source })?;
            let file = entry.file_name();
            let index =
                file.to_str().and_then(|f| f.strip_prefix("constraint_")?.strip_suffix("_name")?.parse::<u32>().ok());
            indices.extend(index);
        }
        indices.sort_unstable();
        let constraints = indices
            .into_iter()
            .map(|k: u32| {
                let attr = |a: &str| dir.join(format!("constraint_{k}_{a}"));
                Ok(Constraint {
                    index: k,
                    name: read_text(&attr("name"))?.trim().to_owned(),
                    power_limit_uw: read_u64(&attr("power_limit_uw"), UW)?,
                    time_window_us: read_opt_u64(&attr("time_window_us"), US)?,
                    max_power_uw: read_opt_u64(&attr("max_power_uw"), UW)?.filter(|&v| v > 0),
                    min_power_uw: read_opt_u64(&attr("min_power_uw"), UW)?,
                })
            })
            .collect::<Result<_, PowercapError>>()?;
        Ok(Zone { id, name, enabled, energy_uj, max_energy_range_uj, constraints })
    }
}

/// `intel-rapl:0:1` → `("intel-rapl", [0, 1])`; `None` for other names, such as the
/// control type directory `intel-rapl`.
fn sort_key(id: &str) -> Option<(String, Vec<u32>)> {
    let mut parts = id.split(':');
    let control_type = parts.next().filter(|t| !t.is_empty())?;
    let indices = parts.map(|p| p.parse().ok()).collect::<Option<Vec<u32>>>()?;
    (!indices.is_empty()).then(|| (control_type.to_owned(), indices))
}

fn select<'a>(zones: &'a [Zone], selector: &str) -> Result<&'a Zone, PowercapError> {
    if let Some(zone) = zones.iter().find(|z| z.id == selector) {
        return Ok(zone);
    }
    match zones.iter().filter(|z| z.name == selector).collect::<Vec<_>>().as_slice() {
        [zone] => Ok(zone),
        [] => Err(PowercapError::UnknownZone { selector: selector.to_owned(), known: known_zones(zones) }),
        many => Err(PowercapError::AmbiguousZone {
            selector: selector.to_owned(),
            ids: list(many.iter().map(|z| z.id.clone())),
        }),
    }
}

fn apply(change: &mut Change) -> Result<(), PowercapError> {
    let path = &change.path;
    let written = fs::OpenOptions::new()
        .write(true)
        .truncate(true)
        .open(path)
        .and_then(|mut f| f.write_all(format!("{}\n", change.new_uw).as_bytes()));
    match written {
        Ok(()) => {}
        Err(e) if e.kind() == io::ErrorKind::PermissionDenied => {
            return Err(PowercapError::PermissionDenied { path: path.clone() })
        }
        Err(source) => return Err(PowercapError::Write { path: path.clone(), source }),
    }
    let read_uw = read_u64(path, UW)?;
    // RAPL stores limits in its power unit (1/2^k W): a read-back less than 1 W off
    // is the hardware's rounding, anything else a clamp or a refusal
    if read_uw.abs_diff(change.new_uw) >= 1_000_000 {
        return Err(PowercapError::ReadBack { path: path.clone(), written_uw: change.new_uw, read_uw });
    }
    change.applied = true;
    change.in_force_uw = Some(read_uw);
    Ok(())
}

fn known_zones(zones: &[Zone]) -> String {
    list(zones.iter().map(|z| format!("{} ({})", z.id, z.name)))
}

fn list(items: impl Iterator<Item = String>) -> String {
    let items: Vec<String> = items.collect();
    if items.is_empty() {
        "none".to_owned()
    } else {
        items.join(", ")
    }
}

fn read_text(path: &Path) -> Result<String, PowercapError> {
    fs::read_to_string(path).map_err(|source| PowercapError::Read { path: path.to_owned(), source })
}

fn parse_u64(path: &Path, text: &str, expected: &'static str) -> Result<u64, PowercapError> {
    let text = text.trim();
    text.parse().map_err(|_| PowercapError::Malformed { path: path.to_owned(), expected, found: text.to_owned() })
}

fn read_u64(path: &Path, expected: &'static str) -> Result<u64, PowercapError> {
    parse_u64(path, &read_text(path)?, expected)
}

/// An optional attribute: absent, unreadable by us, or without data for this zone is `None`.
fn read_opt_u64(path: &Path, expected: &'static str) -> Result<Option<u64>, PowercapError> {
    match fs::read_to_string(path) {
        Ok(text) => parse_u64(path, &text, expected).map(Some),
        Err(e)
            if matches!(e.kind(), io::ErrorKind::NotFound | io::ErrorKind::PermissionDenied)
                || matches!(e.raw_os_error(), Some(ENODATA | EOPNOTSUPP)) =>
        {
            Ok(None)
        }
        Err(source) => Err(PowercapError::Read { path: path.to_owned(), source }),
    }
}

fn watts(uw: u64) -> String {
    format!("{:.3}", uw as f64 / 1e6)
}

/// The zones as `tessera node powercap show` prints them: one row per
/// constraint (a zone without constraints gets one row of dashes).
pub fn zone_table(zones: &[Zone]) -> String {
    let mut rows = vec![["ZONE", "NAME", "ENABLED", "CONSTRAINT", "LIMIT_W", "MAX_W", "WINDOW_MS"].map(String::from)];
    for z in zones {
        let enabled = if z.enabled { "yes" } else { "no" };
        let head = |rest: [String; 4]| {
            let [c, limit, max, window] = rest;
            [z.id.clone(), z.name.clone(), enabled.to_owned(), c, limit, max, window]
        };
        if z.constraints.is_empty() {
            rows.push(head(["-", "-", "-", "-"].map(String::from)));
        }
        for c in &z.constraints {
            rows.push(head([
                c.name.clone(),
                watts(c.power_limit_uw),
                c.max_power_uw.map_or("-".into(), watts),
                c.time_window_us.map_or("-".into(), |us| format!("{:.3}", us as f64 / 1e3)),
            ]));
        }
    }
    let mut width = [0usize; 7];
    for row in &rows {
        for (w, cell) in width.iter_mut().zip(row) {
            *w = (*w).max(cell.chars().count());
        }
    }
    let mut out = String::new();
    for row in &rows {
        let cells: Vec<String> = row
            .iter()
            .zip(width)
            .enumerate()
            // Text columns left-aligned, numbers right-aligned.
            .map(|(i, (cell, w))| if i < 4 { format!("{cell:<w$}") } else { format!("{cell:>w$}") })
            .collect();
        out.push_str(cells.join("  ").trim_end());
        out.push('\n');
    }
    out
}

/// A change as `tessera node powercap set` prints it:
/// `intel-rapl:0 package-0 long_term: 95.000 W -> 60.000 W (/sys/class/powercap/intel-rapl:0/constraint_0_power_limit_uw)`
pub fn change_line(c: &Change) -> String {
    let suffix = match (c.applied, c.in_force_uw) {
        (false, _) => " (dry run: nothing written)".to_string(),
        (true, Some(r)) if r != c.new_uw => format!(" (the hardware rounded it to {} W)", watts(r)),
        (true, _) => String::new(),
    };
    format!(
        "{} {} {}: {} W -> {} W ({}){suffix}",
        c.zone_id,
        c.zone_name,
        c.constraint,
        watts(c.old_uw),
        watts(c.new_uw),
        c.path.display()
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn watts_to_uw_rounds_to_nearest_and_rejects_nonsense() {
        assert_eq!(watts_to_uw(60.0), Some(60_000_000));
        assert_eq!(watts_to_uw(62.5), Some(62_500_000));
        assert_eq!(watts_to_uw(95.123_456_7), Some(95_123_457));
        assert_eq!(watts_to_uw(95.123_456_4), Some(95_123_456));
        assert_eq!(watts_to_uw(100.0 / 3.0), Some(33_333_333));
        assert_eq!(watts_to_uw(0.000_001), Some(1));
        assert_eq!(watts_to_uw(0.000_000_4), None, "rounds to 0 µW");
        for bad in [0.0, -5.0, f64::NAN, f64::INFINITY, f64::NEG_INFINITY, 1e20] {
            assert_eq!(watts_to_uw(bad), None, "{bad}");
        }
    }

    #[test]
    fn zone_ids_sort_numerically_and_control_dirs_are_not_zones() {
        let mut ids = vec!["intel-rapl:10", "intel-rapl-mmio:0", "intel-rapl:2", "intel-rapl:0:1", "intel-rapl:0"];
        ids.sort_by_key(|id| sort_key(id).unwrap());
        assert_eq!(ids, ["intel-rapl:0", "intel-rapl:0:1", "intel-rapl:2", "intel-rapl:10", "intel-rapl-mmio:0"]);
        for not_zone in ["intel-rapl", "intel-rapl:", ":0", "intel-rapl:x", "dtpm"] {
            assert_eq!(sort_key(not_zone), None, "{not_zone}");
        }
    }
}

#[cfg(test)]
mod text_tests {
    use super::*;
    use std::path::PathBuf;

    #[test]
    fn change_lines_say_when_nothing_was_written() {
        let mut c = Change {
            zone_id: "intel-rapl:0".into(),
            zone_name: "package-0".into(),
            constraint: "long_term".into(),
            index: 0,
            path: PathBuf::from("/sys/class/powercap/intel-rapl:0/constraint_0_power_limit_uw"),
            old_uw: 95_000_000,
            new_uw: 60_000_000,
            applied: true,
            in_force_uw: Some(60_000_000),
        };
        assert_eq!(
            change_line(&c),
            "intel-rapl:0 package-0 long_term: 95.000 W -> 60.000 W \
             (/sys/class/powercap/intel-rapl:0/constraint_0_power_limit_uw)"
        );
        c.in_force_uw = Some(59_875_000);
        assert!(change_line(&c).ends_with("_uw) (the hardware rounded it to 59.875 W)"));
        c.applied = false;
        assert!(change_line(&c).ends_with("_uw) (dry run: nothing written)"));
    }

    #[test]
    fn zone_table_has_one_row_per_constraint() {
        let zone = |id: &str, name: &str, constraints| Zone {
            id: id.into(),
            name: name.into(),
            enabled: true,
            energy_uj: None,
            max_energy_range_uj: None,
            constraints,
        };
        let long_term = Constraint {
            index: 0,
            name: "long_term".into(),
            power_limit_uw: 95_000_000,
            time_window_us: Some(999_424),
            max_power_uw: Some(125_000_000),
            min_power_uw: None,
        };
        let table =
            zone_table(&[zone("intel-rapl:0", "package-0", vec![long_term]), zone("intel-rapl:1", "psys", vec![])]);
        assert_eq!(
            table,
            "ZONE          NAME       ENABLED  CONSTRAINT  LIMIT_W    MAX_W  WINDOW_MS\n\
             intel-rapl:0  package-0  yes      long_term    95.000  125.000    999.424\n\
             intel-rapl:1  psys       yes      -                 -        -          -\n"
        );
    }
}
