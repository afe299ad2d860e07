//! `tessera node powercap show|set`: the node side of power capping, by hand. The agent
//! applies the scheduler's per-node CPU cap the same way (`Powercap::cap_node`); this
//! command lets an administrator see the RAPL zones of a node and set or test limits.

use crate::out::{out, outln};
use crate::cli::Format;
use clap::{Args, Subcommand};
use std::path::PathBuf;
use tessera_agent::powercap::{Change, Mode, Powercap, Zone, DEFAULT_ROOT};

#[derive(Args)]
pub struct PowercapArgs {
    #[command(subcommand)]
    pub command: PowercapCommand,
}

#[derive(Subcommand)]
pub enum PowercapCommand {
    /// Show the power zones and their constraints (limits, maxima, time windows).
    Show {
        /// The powercap class directory.
        #[arg(long, default_value = DEFAULT_ROOT)]
        root: PathBuf,
        /// Output format.
        #[arg(long, value_enum, default_value = "table")]
        format: Format,
    },
    /// Set a power limit: on one zone (--zone, --watts), on every CPU package (--watts),
    /// or a whole node's cap split evenly over its packages (--node-watts).
    Set {
        /// The powercap class directory.
        #[arg(long, default_value = DEFAULT_ROOT)]
        root: PathBuf,
        /// Zone id (intel-rapl:0) or name (package-0, dram) [default: every CPU package].
        #[arg(long, conflicts_with = "node_watts")]
        zone: Option<String>,
        /// Constraint, by name: long_term, short_term or peak_power.
        #[arg(long, default_value = "long_term")]
        constraint: String,
        /// Limit in watts for each selected zone.
        #[arg(long, required_unless_present = "node_watts", conflicts_with = "node_watts")]
        watts: Option<f64>,
        /// Limit in watts for the whole node, split evenly over its CPU packages.
        #[arg(long)]
        node_watts: Option<f64>,
        /// Validate and print the changes without writing anything.
        #[arg(long)]
        dry_run: bool,
    },
}

pub fn powercap(a: PowercapArgs) -> anyhow::Result<()> {
    match a.command {
        PowercapCommand::Show { root, format } => {
            let zones = Powercap::new(root).zones()?;
            match format {
                Format::Table => out!("{}", zone_table(&zones))?,
                Format::Json => outln!("{}", serde_json::to_string_pretty(&zones)?)?,
            }
        }
        PowercapCommand::Set { root, zone, constraint, watts, node_watts, dry_run } => {
            let pc = Powercap::new(root);
            let mode = if dry_run { Mode::DryRun } else { Mode::Apply };
            let changes = match (zone, watts, node_watts) {
                (_, _, Some(node)) => pc.cap_node(node, &constraint, mode)?,
                (Some(zone), Some(w), None) => vec![pc.set_limit(&zone, &constraint, w, mode)?],
                (None, Some(w), None) => pc.cap_packages(w, &constraint, mode)?,
                (_, None, None) => anyhow::bail!("give --watts or --node-watts"),
            };
            for change in &changes {
                outln!("{}", change_line(change))?;
            }
        }
    }
    Ok(())
}

fn watts(uw: u64) -> String {
    format!("{:.3}", uw as f64 / 1e6)
}

/// One row per constraint (a zone without constraints gets one row of dashes).
fn zone_table(zones: &[Zone]) -> String {
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

/// `intel-rapl:0 package-0 long_term: 95.000 W -> 60.000 W (/sys/class/powercap/intel-rapl:0/constraint_0_power_limit_uw)`
fn change_line(c: &Change) -> String {
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
    use tessera_agent::powercap::Constraint;

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
