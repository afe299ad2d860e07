//! The power domain of each node an agent presents: where its CPU cap is set
//! and its power read.
//!
//! * A real node's domain is its RAPL packages under powercap ([`crate::powercap`]):
//!   the cap is split over the packages' `long_term` constraints (selected by
//!   name), written and read back; power is the change of the packages'
//!   `energy_uj` counters over time, a counter that wrapped (at its
//!   `max_energy_range_uj`) counted across the wrap.
//! * An emulated node's domain keeps the cap and draws what the cluster file's
//!   node model gives (docs/power.md): a node a job holds draws its cap plus
//!   memory and base power, an idle node its idle power. Its energy is that
//!   power integrated over time.
//!
//! A cap outside the hardware's range (RAPL's constraint minimum and maximum,
//! or the model's lowest cap level and CPU maximum) is refused, and nothing is
//! written. The caps in force are kept in the agent's state directory
//! (`power.json`), so a restarted agent knows them (a real node keeps its RAPL
//! limit in the hardware anyway).

use crate::powercap::{Mode, Powercap};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Instant;
use tessera_proto::api::NodePowerReading;

/// The RAPL constraint a node's cap is written to.
pub const CONSTRAINT: &str = "long_term";

/// How an emulated node draws power (the cluster file's node model).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct NodeModel {
    /// Memory and base power of a busy node (W).
    pub busy_extra_w: f64,
    /// An idle node's power (W).
    pub idle_w: f64,
    /// The lowest CPU cap the node supports (W).
    pub cpu_min_w: f64,
    /// The CPU's maximum (W): its uncapped power.
    pub cpu_max_w: f64,
}

/// Where a node's cap goes and its power comes from.
#[derive(Debug, Clone)]
pub enum Source {
    Model(NodeModel),
    Rapl(Powercap),
    /// The node has no power domain: why (a cap sent to it is refused).
    Missing(String),
}

/// One node's power domain.
#[derive(Debug)]
pub struct Domain {
    pub node: String,
    source: Source,
    /// The CPU cap in force (W); None: never set (uncapped).
    cap_w: Option<f64>,
    busy: bool,
    energy_j: f64,
    /// When `energy_j` was last brought up to date.
    at: Instant,
    /// Each package's last `energy_uj` reading and where it wraps (RAPL).
    counters: BTreeMap<String, (u64, Option<u64>)>,
    /// Power over the last interval read (W).
    watts: f64,
    /// Why the domain cannot be set or read, if it cannot.
    pub error: Option<String>,
}

impl Domain {
    pub fn new(node: String, source: Source, cap_w: Option<f64>) -> Domain {
        let mut d = Domain { node, source, cap_w, busy: false, energy_j: 0.0, at: Instant::now(), counters: BTreeMap::new(), watts: 0.0, error: None };
        if let Source::Rapl(_) = d.source {
            // the first reading is the counters' origin
            if let Err(e) = d.read_rapl() {
                d.error = Some(e);
            }
            d.energy_j = 0.0;
        }
        d.watts = d.model_watts();
        d
    }

    pub fn cap_w(&self) -> Option<f64> {
        self.cap_w
    }

    fn model_watts(&self) -> f64 {
        match &self.source {
            Source::Model(m) if self.busy => self.cap_w.unwrap_or(m.cpu_max_w).min(m.cpu_max_w) + m.busy_extra_w,
            Source::Model(m) => m.idle_w,
            Source::Rapl(_) | Source::Missing(_) => self.watts,
        }
    }

    /// Bring the emulated energy up to `now` at the power drawn until then.
    fn integrate(&mut self, now: Instant) {
        if let Source::Model(_) = self.source {
            self.energy_j += self.model_watts() * now.duration_since(self.at).as_secs_f64();
            self.at = now;
        }
    }

    /// Set the node's CPU cap and whether a job holds it. Returns the cap in
    /// force (RAPL rounds to its power unit), or why it cannot be set (out of
    /// the hardware's range, not writable, not readable back).
    pub fn set(&mut self, cap_w: f64, busy: bool) -> Result<f64, String> {
        let now = Instant::now();
        self.integrate(now);
        let in_force = match &self.source {
            Source::Model(m) => {
                if !(cap_w.is_finite() && cap_w >= m.cpu_min_w - 1e-9 && cap_w <= m.cpu_max_w + 1e-9) {
                    return Err(format!("node {}: a CPU cap of {cap_w} W is outside the node's range, {} to {} W", self.node, m.cpu_min_w, m.cpu_max_w));
                }
                cap_w
            }
            Source::Rapl(p) => {
                let changes = p.cap_node(cap_w, CONSTRAINT, Mode::Apply).map_err(|e| format!("node {}: {e}", self.node))?;
                changes.iter().map(|c| c.in_force_uw.unwrap_or(c.new_uw) as f64 / 1e6).sum()
            }
            Source::Missing(why) => return Err(format!("node {}: {why}", self.node)),
        };
        self.cap_w = Some(in_force);
        self.busy = busy;
        self.error = None;
        Ok(in_force)
    }

    /// Whether a job holds the node (for an emulated node's power).
    pub fn set_busy(&mut self, busy: bool) {
        self.integrate(Instant::now());
        self.busy = busy;
    }

    fn read_rapl(&mut self) -> Result<(), String> {
        let Source::Rapl(p) = &self.source else { return Ok(()) };
        let zones = p.zones().map_err(|e| format!("node {}: {e}", self.node))?;
        let packages: Vec<_> = zones.iter().filter(|z| z.is_package()).collect();
        if packages.is_empty() {
            return Err(format!("node {}: no CPU package zone under {}", self.node, p.root().display()));
        }
        let mut joules = 0.0;
        for z in packages {
            let now_uj = z.energy_uj.ok_or_else(|| format!("node {}: {}/{}/energy_uj is not readable (run the agent as root)", self.node, p.root().display(), z.id))?;
            if let Some(&(last, range)) = self.counters.get(&z.id) {
                let delta = if now_uj >= last { now_uj - last } else { range.map_or(now_uj, |r| r - last + now_uj) };
                joules += delta as f64 / 1e6;
            }
            self.counters.insert(z.id.clone(), (now_uj, z.max_energy_range_uj));
        }
        let now = Instant::now();
        let dt = now.duration_since(self.at).as_secs_f64();
        if dt > 0.0 && !self.counters.is_empty() {
            self.watts = joules / dt;
        }
        self.energy_j += joules;
        self.at = now;
        Ok(())
    }

    /// What the node draws now and has drawn so far.
    pub fn read(&mut self) -> NodePowerReading {
        match self.source {
            Source::Model(_) => self.integrate(Instant::now()),
            Source::Rapl(_) => {
                if let Err(e) = self.read_rapl() {
                    self.error = Some(e);
                }
            }
            Source::Missing(_) => {}
        }
        NodePowerReading { node: self.node.clone(), cap_w: self.cap_w, watts: self.model_watts(), energy_j: self.energy_j, measured: matches!(self.source, Source::Rapl(_)), error: self.error.clone() }
    }
}

/// Which power domain an agent gives its nodes (`--power-domain`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Choice {
    /// The model for nodes a cluster file gives, RAPL for detected ones when
    /// the machine has a package zone.
    Auto,
    Model,
    Rapl,
    None,
}

impl std::str::FromStr for Choice {
    type Err = String;
    fn from_str(s: &str) -> Result<Choice, String> {
        match s {
            "auto" => Ok(Choice::Auto),
            "model" => Ok(Choice::Model),
            "rapl" => Ok(Choice::Rapl),
            "none" => Ok(Choice::None),
            _ => Err(format!("{s:?}: expected auto, model, rapl or none")),
        }
    }
}

/// Each node's power domain under `choice`: `nodes` are (name, its model)
/// for nodes a cluster file gives (the model None when the file has no power
/// model for them), (name, None) for detected nodes, whose RAPL packages are
/// under `root`.
pub fn sources(nodes: Vec<(String, Option<Option<NodeModel>>)>, choice: Choice, root: &Path) -> Result<Vec<(String, Source)>, String> {
    let rapl = Powercap::new(root);
    let has_rapl = rapl.zones().is_ok_and(|z| z.iter().any(|z| z.is_package()));
    if choice == Choice::Model && nodes.iter().any(|n| n.1.is_none()) {
        return Err("--power-domain model: the power model is the cluster file's (give --cluster or --default-cluster)".into());
    }
    Ok(nodes
        .into_iter()
        .filter_map(|(n, from_file)| {
            let s = match (choice, from_file) {
                (Choice::None, _) => None,
                (Choice::Rapl, _) => Some(Source::Rapl(rapl.clone())),
                (Choice::Model | Choice::Auto, Some(m)) => m.map(Source::Model),
                (_, None) => has_rapl.then(|| Source::Rapl(rapl.clone())),
            };
            Some((n, s?))
        })
        .collect())
}

/// The caps in force, kept across the agent's restarts.
#[derive(Debug, Default, Serialize, Deserialize)]
struct Saved {
    caps: BTreeMap<String, f64>,
}

/// Every node's domain and the file that keeps their caps.
#[derive(Debug)]
pub struct Domains {
    pub nodes: Vec<Domain>,
    file: PathBuf,
}

impl Domains {
    /// The domains of the agent's nodes, each with the cap it had when the
    /// agent last ran.
    pub fn open(state_dir: &Path, sources: Vec<(String, Source)>) -> Domains {
        let file = state_dir.join("power.json");
        let saved: Saved = std::fs::read_to_string(&file).ok().and_then(|t| serde_json::from_str(&t).ok()).unwrap_or_default();
        let nodes = sources.into_iter().map(|(n, s)| {
            let cap = saved.caps.get(&n).copied();
            Domain::new(n, s, cap)
        }).collect();
        Domains { nodes, file }
    }

    pub fn get_mut(&mut self, node: &str) -> Option<&mut Domain> {
        self.nodes.iter_mut().find(|d| d.node == node)
    }

    /// A node's domain, or one that says it has none (so that a cap sent to
    /// it is reported as refused, with the reason).
    pub fn get_or_missing(&mut self, node: &str, why: &str) -> &mut Domain {
        let i = match self.nodes.iter().position(|d| d.node == node) {
            Some(i) => i,
            None => {
                self.nodes.push(Domain::new(node.to_string(), Source::Missing(why.to_string()), None));
                self.nodes.len() - 1
            }
        };
        &mut self.nodes[i]
    }

    /// Keep the caps in force (written whole, then renamed over the old file).
    pub fn save(&self) -> std::io::Result<()> {
        let saved = Saved { caps: self.nodes.iter().filter_map(|d| Some((d.node.clone(), d.cap_w?))).collect() };
        let tmp = self.file.with_extension("json.tmp");
        std::fs::write(&tmp, serde_json::to_vec(&saved).map_err(std::io::Error::other)?)?;
        std::fs::rename(&tmp, &self.file)
    }

    pub fn readings(&mut self) -> Vec<NodePowerReading> {
        self.nodes.iter_mut().map(|d| d.read()).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const M: NodeModel = NodeModel { busy_extra_w: 56.0, idle_w: 10.0, cpu_min_w: 30.0, cpu_max_w: 60.0 };

    #[test]
    fn an_emulated_node_keeps_its_cap_and_draws_by_the_model() {
        let mut d = Domain::new("n1".into(), Source::Model(M), None);
        assert_eq!(d.read().watts, 10.0, "idle");
        assert_eq!(d.set(45.0, true), Ok(45.0));
        assert_eq!(d.read().watts, 101.0, "busy at 45 W: 45 + 56");
        assert!(d.set(25.0, true).unwrap_err().contains("outside the node's range, 30 to 60 W"));
        assert!(d.set(61.0, true).is_err());
        assert_eq!(d.cap_w(), Some(45.0), "a refused cap changes nothing");
        d.set_busy(false);
        assert_eq!(d.read().watts, 10.0);
    }
}
