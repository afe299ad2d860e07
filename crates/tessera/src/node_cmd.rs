//! `tessera node powercap show|set`: the node side of power capping, by hand. The agent
//! applies the scheduler's per-node CPU cap the same way (`Powercap::cap_node`); this
//! command lets an administrator see the RAPL zones of a node and set or test limits.

use crate::out::{out, outln};
use crate::cli::{Format, PowercapArgs, PowercapCommand};
use tessera_agent::powercap::{change_line, zone_table, Mode, Powercap};

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
