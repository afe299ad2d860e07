//! Reading a cluster file: stage 1 is a raw serde struct that rejects unknown keys,
//! stage 2 a validated [`Cluster`] with no `Option`s left where a default exists.
//! Every error names the file, the line, the key and what was expected.
//!
//! Numbers are bounded so that nothing computed from a valid file can overflow:
//! counts and totals fit the integer types the engine and the accounting store use
//! (cores `u32`, memory `i64` MiB), benchmarks, speeds and watts stay far below
//! where sums over every node would stop being finite, and scaling factors stay
//! within [`FACTORS`], so that a time scaled by one stays well inside the engine's
//! arithmetic.

use super::{BenchmarkKind, CanonicalUnit, Cluster, Node, NodePower, NodeType, Partition, PreemptMode, Reference, DEFAULT_OVERSUBSCRIBE, DEFAULT_TIME_SLICE_S};
use crate::hostlist::{self, MAX_HOSTS};
use crate::MAX_TIME;
use crate::nodeset::{NodeSetSpec, SetAttribute, SetPlus, SetPolicy, SetPriority};
use serde::Deserialize;
use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::ops::{Range, RangeInclusive};

/// A cluster file that could not be used: where, which key, and what was expected.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub struct ClusterError {
    /// File name or other label of the source text.
    pub source_name: String,
    /// 1-based line, when known.
    pub line: Option<usize>,
    /// Key path, such as `nodetype[2].cores`.
    pub key: String,
    pub message: String,
}

impl fmt::Display for ClusterError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        use crate::quote::{clip, MESSAGE_LIMIT};
        write!(f, "{}", clip(&self.source_name, MESSAGE_LIMIT))?;
        if let Some(l) = self.line {
            write!(f, ":{l}")?;
        }
        if !self.key.is_empty() {
            write!(f, ": {}", crate::quote::bounded(&self.key))?;
        }
        write!(f, ": {}", clip(&self.message, MESSAGE_LIMIT))
    }
}

/// The largest benchmark, speed or power value: beyond any machine, and small
/// enough that a sum or product over every node (at most 2^32 cores) stays finite.
const MAX_NUMBER: f64 = 1e12;

/// Scaling factors allowed, relative to the reference: a limit of 2^42 s on the
/// slowest nodes stays below 2^52 s.
const FACTORS: RangeInclusive<f64> = 0.001..=1000.0;

/// The most memory of one node, and of all nodes together (MiB): the accounting
/// store keeps it as an `i64`.
const MAX_MEMORY_MB: u64 = i64::MAX as u64;

/// Whether `v` is a number > 0 and at most [`MAX_NUMBER`].
fn positive_number(v: f64) -> bool {
    v > 0.0 && v <= MAX_NUMBER
}

// ---- stage 1: raw -------------------------------------------------------------

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawCluster {
    name: Option<String>,
    nodeset_delay: Option<i64>,
    time_slice: Option<i64>,
    power_budget_w: Option<f64>,
    reference: Option<toml::Spanned<RawReference>>,
    nodeset: Option<toml::Spanned<RawNodeSet>>,
    #[serde(default)]
    nodetype: Vec<toml::Spanned<RawNodeType>>,
    #[serde(default)]
    partition: Vec<toml::Spanned<RawPartition>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawReference {
    nodetype: Option<String>,
    hs06_per_core: Option<f64>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawNodeSet {
    policy: String,
    attribute: String,
    #[serde(default)]
    list: Vec<RawValue>,
    #[serde(default)]
    optional: bool,
    tolerance: Option<f64>,
    priority: Option<String>,
    plus: Option<String>,
}

#[derive(Deserialize)]
#[serde(untagged)]
enum RawValue {
    Int(i64),
    Float(f64),
    Text(String),
}

impl RawValue {
    fn text(&self) -> String {
        match self {
            RawValue::Int(i) => i.to_string(),
            RawValue::Float(f) => f.to_string(),
            RawValue::Text(s) => s.clone(),
        }
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawNodeType {
    name: String,
    nodes: Option<String>,
    count: Option<i64>,
    cores: Option<i64>,
    sockets: Option<i64>,
    cores_per_socket: Option<i64>,
    memory: Option<RawMemory>,
    gpus: Option<i64>,
    #[serde(default)]
    features: Vec<String>,
    network: Option<String>,
    speed: Option<f64>,
    hs06: Option<f64>,
    hs06_per_core: Option<f64>,
    hepscore23: Option<f64>,
    hepscore23_per_core: Option<f64>,
    affinity: Option<String>,
    base_power_w: Option<f64>,
    memory_power_w: Option<f64>,
    cpu_max_power_w: Option<f64>,
    cpu_cap_levels_w: Option<Vec<f64>>,
    idle_power_w: Option<f64>,
}

#[derive(Deserialize)]
#[serde(untagged)]
enum RawMemory {
    Mib(i64),
    Text(String),
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawPartition {
    name: String,
    nodes: Option<String>,
    nodetypes: Option<Vec<String>>,
    #[serde(default)]
    default: bool,
    allocation: Option<String>,
    cores_per_node: Option<i64>,
    nodeset: Option<String>,
    canonical_unit: Option<RawUnit>,
    priority_tier: Option<i64>,
    preempt_mode: Option<String>,
    oversubscribe: Option<i64>,
    swf_queue: Option<i64>,
    default_gpus_per_node: Option<i64>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawUnit {
    cores: Option<i64>,
    memory: Option<RawMemory>,
    gpus: Option<i64>,
}

// ---- stage 2: validated ------------------------------------------------------

/// Locating keys in the source text, for error lines.
struct Source<'a> {
    text: &'a str,
    name: &'a str,
    /// Offsets of the text's newlines, so that finding a line is a binary
    /// search, not a count from the start (every node type asks for its own).
    newlines: Vec<usize>,
}

impl<'a> Source<'a> {
    fn new(text: &'a str, name: &'a str) -> Self {
        Source { text, name, newlines: text.match_indices('\n').map(|(i, _)| i).collect() }
    }

    fn line_of(&self, span: Range<usize>) -> Option<usize> {
        let start = span.start.min(self.text.len());
        Some(self.newlines.partition_point(|&i| i < start) + 1)
    }

    /// The line of `key = ...` inside a table, else the table's own line.
    fn key_line(&self, span: Range<usize>, key: &str) -> Option<usize> {
        let start = span.start.min(self.text.len());
        let body = &self.text[start..span.end.min(self.text.len())];
        let mut offset = start;
        for l in body.split_inclusive('\n') {
            let t = l.trim_start();
            if t.strip_prefix(key).is_some_and(|rest| rest.trim_start().starts_with('=')) {
                return self.line_of(offset..offset);
            }
            offset += l.len();
        }
        self.line_of(span)
    }

    fn err(&self, line: Option<usize>, key: impl Into<String>, message: impl Into<String>) -> ClusterError {
        ClusterError { source_name: self.name.to_string(), line, key: key.into(), message: message.into() }
    }
}

impl Cluster {
    /// Parse and validate a cluster file's text. `source_name` labels errors.
    pub fn from_toml(text: &str, source_name: &str) -> Result<Cluster, ClusterError> {
        let src = Source::new(text, source_name);
        let raw: RawCluster = toml::from_str(text).map_err(|e| {
            let line = e.span().and_then(|s| src.line_of(s));
            src.err(line, String::new(), e.message().trim().to_string())
        })?;
        if raw.nodetype.is_empty() {
            return Err(src.err(None, "nodetype", "expected at least one [[nodetype]] table"));
        }
        if let Some(name) = &raw.name {
            plain_name(name).map_err(|m| src.err(src.key_line(0..text.len(), "name"), "name", m))?;
        }
        let nodeset_delay = match raw.nodeset_delay {
            None => 0,
            Some(d) if (0..=MAX_TIME).contains(&d) => d,
            Some(d) => return Err(src.err(src.key_line(0..text.len(), "nodeset_delay"), "nodeset_delay", format!("expected seconds from 0 to 2^42 = {MAX_TIME}, found {d}"))),
        };
        let site_nodeset = match &raw.nodeset {
            None => None,
            Some(sp) => Some(site_nodeset(&src, sp)?),
        };
        let mut node_types = Vec::new();
        let mut nodes: Vec<Node> = Vec::new();
        let mut by_name: BTreeMap<String, usize> = BTreeMap::new();
        // node types by name, and the nodes of each (a type's nodes are consecutive)
        let mut type_by_name: BTreeMap<&str, usize> = BTreeMap::new();
        let mut nodes_of_type: Vec<Range<usize>> = Vec::new();
        let mut benchmarks: Vec<Option<(f64, BenchmarkKind, &'static str)>> = Vec::new();
        // cores and memory of the node types so far (each node has a core, so the
        // node count is bounded too)
        let (mut total_cores, mut total_memory_mb) = (0u64, 0u64);
        for (i, spanned) in raw.nodetype.iter().enumerate() {
            let t = spanned.get_ref();
            let key = |k: &str| format!("nodetype[{i}].{k}");
            let at = |k: &str| src.key_line(spanned.span(), k);
            let line = src.line_of(spanned.span());
            let positive = |k: &str, v: i64| {
                if v >= 1 && v <= u32::MAX as i64 {
                    Ok(v as u32)
                } else {
                    Err(src.err(at(k), key(k), format!("expected an integer >= 1, found {v}")))
                }
            };
            let positive_f = |k: &str, v: f64| {
                if positive_number(v) {
                    Ok(v)
                } else {
                    Err(src.err(at(k), key(k), format!("expected a number > 0 and at most {MAX_NUMBER:e}, found {v:?}")))
                }
            };
            if t.name.trim().is_empty() {
                return Err(src.err(at("name"), key("name"), "expected a non-empty name"));
            }
            // it prefixes its nodes' names (count) and names them in partitions
            hostlist::check_name(&t.name).map_err(|m| src.err(at("name"), key("name"), m))?;
            if type_by_name.contains_key(t.name.as_str()) {
                return Err(src.err(at("name"), key("name"), format!("node type `{}` is defined twice", t.name)));
            }
            for (k, f) in t.features.iter().enumerate() {
                feature_name(f).map_err(|m| src.err(at("features"), key(&format!("features[{k}]")), m))?;
            }
            if let Some(net) = &t.network {
                plain_name(net).map_err(|m| src.err(at("network"), key("network"), m))?;
            }
            let (sockets, cores_per_socket) = match (t.cores, t.sockets, t.cores_per_socket) {
                (Some(c), None, None) => (1, positive("cores", c)?),
                (None, Some(s), Some(c)) => (positive("sockets", s)?, positive("cores_per_socket", c)?),
                (Some(c), Some(s), Some(cps)) => {
                    let (c, s, cps) = (positive("cores", c)?, positive("sockets", s)?, positive("cores_per_socket", cps)?);
                    if c as u64 != s as u64 * cps as u64 {
                        return Err(src.err(at("cores"), key("cores"), format!("cores = {c} but sockets x cores_per_socket = {}", s as u64 * cps as u64)));
                    }
                    (s, cps)
                }
                _ => return Err(src.err(line, key("cores"), "expected `cores`, or `sockets` and `cores_per_socket`")),
            };
            if (sockets as u64) * (cores_per_socket as u64) > u32::MAX as u64 {
                return Err(src.err(at("cores"), key("cores"), "too many cores per node"));
            }
            let cores = sockets * cores_per_socket;
            let memory_mb = match &t.memory {
                None => 0,
                Some(m) => memory_mb(m).map_err(|m| src.err(at("memory"), key("memory"), m))?,
            };
            let gpus = match t.gpus {
                None => 0,
                Some(g) if (0..=u32::MAX as i64).contains(&g) => g as u32,
                Some(g) => return Err(src.err(at("gpus"), key("gpus"), format!("expected an integer >= 0, found {g}"))),
            };
            let names = match (&t.nodes, t.count) {
                (Some(list), count) => {
                    let names = hostlist::expand(list).map_err(|e| src.err(at("nodes"), key("nodes"), e.to_string()))?;
                    for name in &names {
                        hostlist::check_name(name).map_err(|m| src.err(at("nodes"), key("nodes"), m))?;
                    }
                    if let Some(c) = count {
                        if c != names.len() as i64 {
                            return Err(src.err(at("count"), key("count"), format!("count = {c} but `nodes` names {} nodes", names.len())));
                        }
                    }
                    names
                }
                (None, Some(c)) => {
                    let c = positive("count", c)?;
                    if c as usize > MAX_HOSTS {
                        return Err(src.err(at("count"), key("count"), format!("expected at most {MAX_HOSTS} nodes, found {c}")));
                    }
                    let width = c.to_string().len().max(2);
                    (1..=c).map(|k| format!("{}{k:0width$}", t.name)).collect()
                }
                (None, None) => return Err(src.err(line, key("nodes"), "expected `nodes` (a hostlist such as node[001-128]) or `count`")),
            };
            // the cluster's totals with this type's nodes
            let n = names.len() as u64;
            let counted = if t.nodes.is_some() { "nodes" } else { "count" };
            total_cores = match n.checked_mul(cores as u64).and_then(|c| c.checked_add(total_cores)).filter(|&c| c <= u32::MAX as u64) {
                Some(c) => c,
                None => return Err(src.err(at(counted), key(counted), format!("{n} nodes of {cores} cores take the cluster beyond {} cores: expected at most that in total", u32::MAX))),
            };
            total_memory_mb = match n.checked_mul(memory_mb).and_then(|m| m.checked_add(total_memory_mb)).filter(|&m| m <= MAX_MEMORY_MB) {
                Some(m) => m,
                None => return Err(src.err(at("memory"), key("memory"), format!("{n} nodes of {memory_mb} MiB take the cluster beyond {MAX_MEMORY_MB} MiB: expected at most that in total"))),
            };
            let bench_keys = [("hs06", t.hs06), ("hs06_per_core", t.hs06_per_core), ("hepscore23", t.hepscore23), ("hepscore23_per_core", t.hepscore23_per_core)];
            let given: Vec<(&str, f64)> = bench_keys.iter().filter_map(|(k, v)| v.map(|v| (*k, v))).collect();
            let benchmark = match given.as_slice() {
                [] => None,
                [(k, v)] => {
                    let v = positive_f(k, *v)?;
                    let per_core = if k.ends_with("_per_core") { v } else { v / cores as f64 };
                    let kind = if k.starts_with("hs06") { BenchmarkKind::Hs06 } else { BenchmarkKind::HepScore23 };
                    Some((per_core, kind, *k))
                }
                _ => {
                    let ks: Vec<&str> = given.iter().map(|g| g.0).collect();
                    return Err(src.err(at(ks[1]), key(ks[1]), format!("give one benchmark per node type, found {}", ks.join(" and "))));
                }
            };
            benchmarks.push(benchmark);
            let speed = match t.speed {
                None => None,
                Some(s) => Some(positive_f("speed", s)?),
            };
            let negative_affinity = match t.affinity.as_deref() {
                None | Some("none") => false,
                Some("negative") => true,
                Some(other) => return Err(src.err(at("affinity"), key("affinity"), format!("expected \"negative\" or \"none\", found \"{other}\""))),
            };
            let power_keys = [t.base_power_w, t.memory_power_w, t.cpu_max_power_w];
            let power = if power_keys.iter().all(|k| k.is_none()) && t.cpu_cap_levels_w.is_none() && t.idle_power_w.is_none() {
                None
            } else {
                let need = |k: &str, v: Option<f64>| match v {
                    Some(x) if x == 0.0 || positive_number(x) => Ok(x),
                    Some(x) => Err(src.err(at(k), key(k), format!("expected watts from 0 to {MAX_NUMBER:e}, found {x:?}"))),
                    None => Err(src.err(line, key(k), "a power model needs base_power_w, memory_power_w, cpu_max_power_w and cpu_cap_levels_w")),
                };
                let cpu_max_w = need("cpu_max_power_w", t.cpu_max_power_w)?;
                let mut levels = t.cpu_cap_levels_w.clone().ok_or_else(|| src.err(line, key("cpu_cap_levels_w"), "a power model needs cpu_cap_levels_w, e.g. [30, 33, 36, 44, 50, 60]"))?;
                if levels.is_empty() || levels.iter().any(|&l| !(l.is_finite() && l > 0.0 && l <= cpu_max_w)) {
                    return Err(src.err(at("cpu_cap_levels_w"), key("cpu_cap_levels_w"), format!("expected caps in (0, cpu_max_power_w = {cpu_max_w}] W")));
                }
                levels.sort_by(f64::total_cmp);
                levels.dedup();
                Some(NodePower {
                    base_w: need("base_power_w", t.base_power_w)?,
                    memory_w: need("memory_power_w", t.memory_power_w)?,
                    cap_levels_w: levels,
                    cpu_max_w,
                    idle_w: match t.idle_power_w {
                        None => 0.0,
                        v => need("idle_power_w", v)?,
                    },
                })
            };
            let ti = node_types.len();
            type_by_name.insert(&t.name, ti);
            node_types.push(NodeType {
                name: t.name.clone(),
                sockets,
                cores_per_socket,
                memory_mb,
                gpus,
                features: t.features.clone(),
                network: t.network.clone(),
                speed: speed.unwrap_or(f64::NAN),
                benchmark_per_core: benchmark.map(|b| b.0),
                benchmark_kind: benchmark.map(|b| b.1),
                factor: 1.0,
                negative_affinity,
                power,
            });
            let first = nodes.len();
            for name in names {
                if by_name.contains_key(&name) {
                    return Err(src.err(at("nodes"), key("nodes"), format!("node `{name}` is listed twice")));
                }
                by_name.insert(name.clone(), nodes.len());
                nodes.push(Node { name, node_type: ti, cores, memory_mb, gpus });
            }
            nodes_of_type.push(first..nodes.len());
        }
        // scaling factors
        let any_bench = benchmarks.iter().any(|b| b.is_some());
        if any_bench {
            if let Some(i) = benchmarks.iter().position(|b| b.is_none()) {
                let line = src.line_of(raw.nodetype[i].span());
                return Err(src.err(line, format!("nodetype[{i}]"), "expected a benchmark (hs06, hs06_per_core, hepscore23 or hepscore23_per_core), since other node types have one"));
            }
        }
        let reference = match (&raw.reference, any_bench) {
            (None, false) => Reference { name: "none".into(), hs06_per_core: 0.0 },
            // every node type has a benchmark (checked above)
            (None, true) => Reference {
                name: node_types[0].name.clone(),
                hs06_per_core: node_types[0].benchmark_per_core.ok_or_else(|| src.err(src.line_of(raw.nodetype[0].span()), "nodetype[0]", "expected a benchmark"))?,
            },
            (Some(sp), _) => {
                let r = sp.get_ref();
                let at = |k: &str| src.key_line(sp.span(), k);
                match (&r.nodetype, r.hs06_per_core) {
                    (Some(name), None) => {
                        let t = type_by_name.get(name.as_str()).map(|&i| &node_types[i]).ok_or_else(|| {
                            let known: Vec<&str> = node_types.iter().map(|t| t.name.as_str()).collect();
                            src.err(at("nodetype"), "reference.nodetype", format!("unknown node type `{name}`; known: {}", known.join(", ")))
                        })?;
                        let b = t.benchmark_per_core.ok_or_else(|| src.err(at("nodetype"), "reference.nodetype", format!("node type `{name}` has no benchmark")))?;
                        Reference { name: name.clone(), hs06_per_core: b }
                    }
                    (None, Some(v)) if positive_number(v) => Reference { name: "abstract".into(), hs06_per_core: v },
                    (None, Some(v)) => return Err(src.err(at("hs06_per_core"), "reference.hs06_per_core", format!("expected a number > 0 and at most {MAX_NUMBER:e}, found {v:?}"))),
                    _ => return Err(src.err(src.line_of(sp.span()), "reference", "expected exactly one of `nodetype` (a node type name) or `hs06_per_core` (a number)")),
                }
            }
        };
        if let (Some(sp), false) = (&raw.reference, any_bench) {
            return Err(src.err(src.line_of(sp.span()), "reference", "a reference needs node types with benchmarks"));
        }
        for (i, t) in node_types.iter_mut().enumerate() {
            if let (Some(b), Some((_, _, k))) = (t.benchmark_per_core, benchmarks[i]) {
                t.factor = b / reference.hs06_per_core;
                if !FACTORS.contains(&t.factor) {
                    let line = src.key_line(raw.nodetype[i].span(), k);
                    return Err(src.err(line, format!("nodetype[{i}].{k}"), format!(
                        "gives a scaling factor of {:?} ({b:?} HS06 per core over the reference's {:?}): expected {} to {}",
                        t.factor, reference.hs06_per_core, FACTORS.start(), FACTORS.end()
                    )));
                }
            }
            if t.speed.is_nan() {
                t.speed = t.factor;
            }
        }
        let mut partitions = Vec::new();
        let mut partition_names = BTreeSet::new();
        let mut queues: BTreeMap<i64, usize> = BTreeMap::new();
        // the last partition (index + 1) that listed each node and node type, for
        // duplicates; and how many partitions hold each node
        let (mut node_seen, mut type_seen) = (vec![0usize; nodes.len()], vec![0usize; node_types.len()]);
        let mut holders = vec![0u32; nodes.len()];
        for (i, spanned) in raw.partition.iter().enumerate() {
            let p = spanned.get_ref();
            let key = |k: &str| format!("partition[{i}].{k}");
            let at = |k: &str| src.key_line(spanned.span(), k);
            plain_name(&p.name).map_err(|m| src.err(at("name"), key("name"), m))?;
            if !partition_names.insert(p.name.as_str()) {
                return Err(src.err(at("name"), key("name"), format!("partition `{}` is defined twice", p.name)));
            }
            let members: Vec<usize> = match (&p.nodes, &p.nodetypes) {
                (Some(list), None) => {
                    let mut v = Vec::new();
                    for n in hostlist::expand(list).map_err(|e| src.err(at("nodes"), key("nodes"), e.to_string()))? {
                        let k = by_name.get(&n).copied().ok_or_else(|| src.err(at("nodes"), key("nodes"), format!("node `{n}` is not defined by any [[nodetype]]")))?;
                        if node_seen[k] == i + 1 {
                            return Err(src.err(at("nodes"), key("nodes"), format!("node `{n}` is listed twice")));
                        }
                        node_seen[k] = i + 1;
                        v.push(k);
                    }
                    v
                }
                (None, Some(types)) => {
                    let mut v = Vec::new();
                    for t in types {
                        let ti = type_by_name.get(t.as_str()).copied().ok_or_else(|| {
                            let known: Vec<&str> = node_types.iter().map(|nt| nt.name.as_str()).collect();
                            src.err(at("nodetypes"), key("nodetypes"), format!("unknown node type `{t}`; known: {}", known.join(", ")))
                        })?;
                        if type_seen[ti] == i + 1 {
                            return Err(src.err(at("nodetypes"), key("nodetypes"), format!("node type `{t}` is listed twice")));
                        }
                        type_seen[ti] = i + 1;
                        v.extend(nodes_of_type[ti].clone());
                    }
                    v
                }
                _ => return Err(src.err(at("nodes"), key("nodes"), "expected exactly one of `nodes` (a hostlist) or `nodetypes`")),
            };
            if members.is_empty() {
                return Err(src.err(at("nodes"), key("nodes"), "a partition needs at least one node"));
            }
            let exclusive = match p.allocation.as_deref() {
                None | Some("shared") => false,
                Some("exclusive") => true,
                Some(o) => return Err(src.err(at("allocation"), key("allocation"), format!("expected \"exclusive\" or \"shared\", found \"{o}\""))),
            };
            let min_cores = members.iter().map(|&n| nodes[n].cores).min().unwrap();
            let cores_per_node = match p.cores_per_node {
                None => min_cores,
                Some(c) if c >= 1 && c <= min_cores as i64 => c as u32,
                Some(c) => return Err(src.err(at("cores_per_node"), key("cores_per_node"), format!("expected 1..={min_cores} (the fewest cores of a node in the partition), found {c}"))),
            };
            let nodeset = match &p.nodeset {
                None => None,
                Some(s) => {
                    let spec = NodeSetSpec::parse_job(s).map_err(|e| src.err(at("nodeset"), key("nodeset"), e.to_string()))?;
                    let spec = spec.with_site_options(site_nodeset.as_ref());
                    spec.validate().map_err(|m| src.err(at("nodeset"), key("nodeset"), m))?;
                    Some(spec)
                }
            };
            let has_gpus = members.iter().any(|&n| nodes[n].gpus > 0);
            let fewest_gpus = members.iter().map(|&n| nodes[n].gpus).min().unwrap();
            let default_gpus_per_node = match p.default_gpus_per_node {
                None => 0,
                Some(g) if exclusive && g != 0 => {
                    return Err(src.err(at("default_gpus_per_node"), key("default_gpus_per_node"), format!("an exclusive partition's jobs hold every GPU of their nodes; leave it out, found {g}")))
                }
                Some(g) if (0..=fewest_gpus as i64).contains(&g) => g as u32,
                Some(g) => {
                    return Err(src.err(at("default_gpus_per_node"), key("default_gpus_per_node"), format!("expected 0..={fewest_gpus} (the fewest GPUs of a node in the partition), found {g}")))
                }
            };
            let canonical_unit = match &p.canonical_unit {
                None if has_gpus => CanonicalUnit::GPU,
                None => CanonicalUnit::CPU,
                Some(u) => {
                    let bad = |m: String| src.err(at("canonical_unit"), key("canonical_unit"), m);
                    let count = |v: Option<i64>, what: &str| match v {
                        None => Ok(0u32),
                        Some(x) if (0..=u32::MAX as i64).contains(&x) => Ok(x as u32),
                        Some(x) => Err(bad(format!("{what}: expected an integer >= 0, found {x}"))),
                    };
                    let memory_mb = match &u.memory {
                        None => 0,
                        Some(m) => memory_mb(m).map_err(|m| bad(format!("memory: {m}")))?,
                    };
                    let unit = CanonicalUnit { cores: count(u.cores, "cores")?, memory_mb, gpus: count(u.gpus, "gpus")? };
                    if unit == (CanonicalUnit { cores: 0, memory_mb: 0, gpus: 0 }) {
                        return Err(bad("expected at least one threshold (cores, memory or gpus), e.g. { cores = 1, memory = \"2G\" }".into()));
                    }
                    unit
                }
            };
            let priority_tier = match p.priority_tier {
                None => 1,
                Some(t) if (0..=u16::MAX as i64).contains(&t) => t as u32,
                Some(t) => return Err(src.err(at("priority_tier"), key("priority_tier"), format!("expected an integer 0..=65535, found {t}"))),
            };
            let preempt = match p.preempt_mode.as_deref() {
                None | Some("off") => PreemptMode::Off,
                Some("suspend") => PreemptMode::Suspend,
                Some("gang") => PreemptMode::Gang,
                Some(o) => return Err(src.err(at("preempt_mode"), key("preempt_mode"), format!("expected \"off\", \"suspend\" or \"gang\", found \"{o}\""))),
            };
            let oversubscribe = match (p.oversubscribe, preempt) {
                (None, PreemptMode::Gang) => DEFAULT_OVERSUBSCRIBE,
                (None, _) => 1,
                (Some(n), PreemptMode::Gang) if (2..=64).contains(&n) => n as u32,
                (Some(n), PreemptMode::Gang) => return Err(src.err(at("oversubscribe"), key("oversubscribe"), format!("expected 2..=64 jobs per core, found {n}"))),
                (Some(_), _) => return Err(src.err(at("oversubscribe"), key("oversubscribe"), "only a partition with preempt_mode = \"gang\" shares cores")),
            };
            if preempt == PreemptMode::Gang && exclusive {
                return Err(src.err(at("preempt_mode"), key("preempt_mode"), "a gang partition shares cores: it needs allocation = \"shared\""));
            }
            if preempt == PreemptMode::Gang && nodeset.is_some() {
                return Err(src.err(at("nodeset"), key("nodeset"), "a gang partition cannot have a node set"));
            }
            if let Some(q) = p.swf_queue {
                if let Some(&other) = queues.get(&q) {
                    return Err(src.err(at("swf_queue"), key("swf_queue"), format!("queue {q} already goes to partition `{}`", raw.partition[other].get_ref().name)));
                }
                queues.insert(q, i);
            }
            for &n in &members {
                holders[n] += 1;
            }
            partitions.push(Partition {
                name: p.name.clone(),
                nodes: members,
                default: p.default,
                exclusive,
                cores_per_node,
                nodeset,
                canonical_unit,
                priority_tier,
                preempt,
                oversubscribe,
                swf_queue: p.swf_queue,
                default_gpus_per_node,
            });
        }
        if partitions.iter().filter(|p| p.default).count() > 1 {
            return Err(src.err(None, "partition.default", "at most one partition may be the default"));
        }
        if partitions.is_empty() {
            let min_cores = nodes.iter().map(|n| n.cores).min().unwrap();
            let canonical_unit = if nodes.iter().any(|n| n.gpus > 0) { CanonicalUnit::GPU } else { CanonicalUnit::CPU };
            partitions.push(Partition { name: "all".into(), nodes: (0..nodes.len()).collect(), default: true, cores_per_node: min_cores, canonical_unit, ..Partition::plain() });
        } else if !partitions.iter().any(|p| p.default) {
            partitions[0].default = true;
        }
        // a node of a gang partition that another partition holds too: name the
        // first such partition
        for (i, g) in partitions.iter().enumerate().filter(|(_, p)| p.preempt == PreemptMode::Gang) {
            if !g.nodes.iter().any(|&n| holders[n] > 1) {
                continue;
            }
            let mut in_g = vec![false; nodes.len()];
            for &n in &g.nodes {
                in_g[n] = true;
            }
            if let Some((_, o)) = partitions.iter().enumerate().find(|&(k, o)| k != i && o.nodes.iter().any(|&n| in_g[n])) {
                let line = src.key_line(raw.partition[i].span(), "preempt_mode");
                return Err(src.err(line, format!("partition[{i}].nodes"), format!("the nodes of gang partition `{}` must belong to no other partition; `{}` shares some", g.name, o.name)));
            }
        }
        let time_slice_s = match raw.time_slice {
            None => DEFAULT_TIME_SLICE_S,
            Some(d) if (1..=86_400).contains(&d) => d,
            Some(d) => return Err(src.err(src.key_line(0..text.len(), "time_slice"), "time_slice", format!("expected seconds 1..=86400, found {d}"))),
        };
        let power_budget_w = match raw.power_budget_w {
            None => None,
            Some(w) if w.is_finite() && w > 0.0 => {
                if node_types.iter().any(|t| t.power.is_none()) {
                    return Err(src.err(src.key_line(0..text.len(), "power_budget_w"), "power_budget_w", "a power budget needs a power model (base_power_w, memory_power_w, cpu_max_power_w, cpu_cap_levels_w) on every node type"));
                }
                Some(w)
            }
            Some(w) => return Err(src.err(src.key_line(0..text.len(), "power_budget_w"), "power_budget_w", format!("expected watts > 0, found {w}"))),
        };
        let cluster = Cluster {
            power_budget_w,
            name: raw.name.unwrap_or_else(|| "cluster".into()),
            node_types,
            nodes,
            partitions,
            reference,
            nodeset: site_nodeset,
            nodeset_delay,
            time_slice_s,
        };
        if let Some(w) = power_budget_w {
            cluster.check_power_budget(w).map_err(|m| src.err(src.key_line(0..text.len(), "power_budget_w"), "power_budget_w", m))?;
        }
        Ok(cluster)
    }
}

/// A name the file holds (the cluster's, a partition's, a feature, a network):
/// printed in tables and published in LDIF, so without control characters.
/// (Node and node type names are host names: [`hostlist::check_name`].)
fn plain_name(name: &str) -> Result<(), String> {
    if name.chars().any(char::is_control) {
        return Err(format!("expected a name without control characters, found {}", crate::quote::bounded(name)));
    }
    Ok(())
}

/// The characters that separate features in a node-set request
/// (`ONEOF:FEATURE:a,b`, `nodeset=ONEOF:FEATURE:a:b`) or a constraint
/// (`[a|b]`, `a&b`, `a*2`, `(a)`): a feature holding one could not be named.
const FEATURE_SEPARATORS: &[char] = &[',', ':', '|', '[', ']', '&', '*', '(', ')', '='];

/// A feature: a [`plain_name`] that node-set requests and constraints can
/// name (no separator of theirs, no white space, not empty).
fn feature_name(name: &str) -> Result<(), String> {
    plain_name(name)?;
    if name.is_empty() || name.chars().any(|c| c.is_whitespace() || FEATURE_SEPARATORS.contains(&c)) {
        return Err(format!(
            "expected a feature name without white space or any of {} (they separate features in node-set requests and constraints), found {}",
            FEATURE_SEPARATORS.iter().collect::<String>(),
            crate::quote::bounded(name)
        ));
    }
    Ok(())
}

fn site_nodeset(src: &Source<'_>, sp: &toml::Spanned<RawNodeSet>) -> Result<NodeSetSpec, ClusterError> {
    let r = sp.get_ref();
    let at = |k: &str| src.key_line(sp.span(), k);
    let key = |k: &str| format!("nodeset.{k}");
    let policy: SetPolicy = r.policy.parse().map_err(|m: String| src.err(at("policy"), key("policy"), m))?;
    let attribute: SetAttribute = r.attribute.parse().map_err(|m: String| src.err(at("attribute"), key("attribute"), m))?;
    let list: Vec<String> = r.list.iter().map(RawValue::text).collect();
    let mut spec = NodeSetSpec::new(policy, attribute, list);
    spec.optional = r.optional;
    spec.tolerance = r.tolerance;
    if let Some(p) = &r.priority {
        spec.priority = p.parse::<SetPriority>().map_err(|m| src.err(at("priority"), key("priority"), m))?;
    }
    if let Some(p) = &r.plus {
        spec.plus = p.parse::<SetPlus>().map_err(|m| src.err(at("plus"), key("plus"), m))?;
    }
    spec.validate().map_err(|m| src.err(src.line_of(sp.span()), "nodeset", m))?;
    // list values must be numbers for numeric attributes
    NodeSetSpec::parse_moab(&spec.to_string()).map_err(|e| src.err(at("list"), key("list"), e.to_string()))?;
    Ok(spec)
}

/// A memory key: MiB as an integer, or a size as text; at most [`MAX_MEMORY_MB`].
fn memory_mb(raw: &RawMemory) -> Result<u64, String> {
    let (mb, found) = match raw {
        RawMemory::Mib(m) => (u64::try_from(*m).ok(), m.to_string()),
        RawMemory::Text(s) => (parse_memory_mb(s), format!("\"{s}\"")),
    };
    mb.filter(|&m| m <= MAX_MEMORY_MB)
        .ok_or_else(|| format!("expected a size such as \"512M\", \"32G\" or \"1T\", or MiB from 0 to {MAX_MEMORY_MB}, found {found}"))
}

/// "512M", "32G", "1.5T", "64GB", "2048" (MiB) → MiB; `None` beyond `u64`.
fn parse_memory_mb(s: &str) -> Option<u64> {
    let s = s.trim();
    let upper = s.to_ascii_uppercase();
    let t = upper.trim_end_matches('B').trim_end_matches('I');
    let (num, mult) = match t.chars().last()? {
        'K' => (&t[..t.len() - 1], 1.0 / 1024.0),
        'M' => (&t[..t.len() - 1], 1.0),
        'G' => (&t[..t.len() - 1], 1024.0),
        'T' => (&t[..t.len() - 1], 1024.0 * 1024.0),
        c if c.is_ascii_digit() => (t, 1.0),
        _ => return None,
    };
    let v: f64 = num.trim().parse().ok()?;
    let mb = (v * mult).round();
    // u64::MAX as f64 is 2^64: the largest f64 below it converts exactly
    (mb.is_finite() && mb >= 0.0 && mb < u64::MAX as f64).then_some(mb as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    const EXAMPLE: &str = r#"
name = "mini"

[[nodetype]]
name = "std"
nodes = "n[01-04]"
sockets = 2
cores_per_socket = 4
memory = "32G"

[[nodetype]]
name = "gpu"
nodes = "g[1-2]"
cores = 16
memory = 65536
gpus = 4

[[partition]]
name = "batch"
nodetypes = ["std"]
default = true

[[partition]]
name = "all"
nodes = "n[01-04],g[1-2]"
"#;

    #[test]
    fn parses_node_types_partitions_and_hostlists() {
        let c = Cluster::from_toml(EXAMPLE, "mini.toml").unwrap();
        assert_eq!(c.nodes.len(), 6);
        assert_eq!(c.total_cores(), 4 * 8 + 2 * 16);
        assert_eq!(c.nodes[0].name, "n01");
        assert_eq!(c.nodes[4].memory_mb, 65536);
        assert_eq!(c.nodes[0].memory_mb, 32768);
        assert_eq!(c.default_partition().name, "batch");
        assert_eq!(c.partitions[1].nodes, vec![0, 1, 2, 3, 4, 5]);
    }

    #[test]
    fn errors_name_file_line_key_and_expectation() {
        let bad = EXAMPLE.replace("cores = 16", "cores = 0");
        let e = Cluster::from_toml(&bad, "mini.toml").unwrap_err().to_string();
        assert_eq!(e, "mini.toml:14: `nodetype[1].cores`: expected an integer >= 1, found 0");

        let bad = EXAMPLE.replace("gpus = 4", "gpu = 4");
        let e = Cluster::from_toml(&bad, "mini.toml").unwrap_err().to_string();
        assert!(e.starts_with("mini.toml:16: unknown field `gpu`, expected one of"), "{e}");
        assert!(e.contains("`gpus`"), "{e}");

        let bad = EXAMPLE.replace("nodetypes = [\"std\"]", "nodetypes = [\"fat\"]");
        let e = Cluster::from_toml(&bad, "mini.toml").unwrap_err().to_string();
        assert!(e.contains("`partition[0].nodetypes`: unknown node type `fat`; known: std, gpu"), "{e}");

        let bad = EXAMPLE.replace("memory = \"32G\"", "memory = \"lots\"");
        let e = Cluster::from_toml(&bad, "mini.toml").unwrap_err().to_string();
        assert!(e.contains("`nodetype[0].memory`: expected a size"), "{e}");

        let bad = EXAMPLE.replace("n[01-04],g[1-2]", "n[01-05]");
        let e = Cluster::from_toml(&bad, "mini.toml").unwrap_err().to_string();
        assert!(e.contains("node `n05` is not defined"), "{e}");
    }

    const HETERO: &str = r#"
nodeset_delay = 600

[reference]
nodetype = "old"

[nodeset]
policy = "ONEOF"
attribute = "PROCSPEED"
tolerance = 0.5
priority = "MINLOSS"
optional = true

[[nodetype]]
name = "old"
count = 3
cores = 4
hs06 = 40
speed = 2000
features = ["switchA"]
network = "eth"

[[nodetype]]
name = "new"
nodes = "new[1-2]"
sockets = 2
cores_per_socket = 4
hepscore23_per_core = 20
features = ["switchB", "ib"]
affinity = "negative"

[[partition]]
name = "batch"
nodetypes = ["old", "new"]
allocation = "exclusive"
cores_per_node = 4
nodeset = "ONEOF:FEATURE:switchA,switchB"
default = true
"#;

    #[test]
    fn benchmarks_reference_and_node_sets() {
        let c = Cluster::from_toml(HETERO, "h.toml").unwrap();
        assert_eq!(c.nodes.iter().map(|n| n.name.as_str()).collect::<Vec<_>>(), ["old01", "old02", "old03", "new1", "new2"]);
        assert_eq!(c.node_types[0].benchmark_per_core, Some(10.0), "40 HS06 per node over 4 cores");
        assert_eq!(c.node_types[1].factor, 2.0, "HEPscore23 counts as HS06");
        assert_eq!(c.node_types[1].speed, 2.0, "no speed given: the factor");
        assert_eq!(c.reference.hs06_per_core, 10.0);
        assert!(c.node_types[1].negative_affinity);
        assert_eq!(c.nodeset_delay, 600);
        let site = c.nodeset.as_ref().unwrap();
        assert_eq!((site.tolerance, site.optional), (Some(0.5), true));
        let p = &c.partitions[0];
        assert!(p.exclusive && p.cores_per_node == 4);
        let pn = p.nodeset.as_ref().unwrap();
        assert_eq!(pn.to_string(), "ONEOF:FEATURE:switchA,switchB");
        assert_eq!((pn.optional, pn.priority, pn.tolerance), (true, crate::SetPriority::MinLoss, None), "site options, no tolerance for FEATURE");
    }

    #[test]
    fn heterogeneity_errors_name_key_and_allowed_values() {
        let cases = [
            ("hs06 = 40", "hs06 = 40\nhs06_per_core = 10", "`nodetype[0].hs06_per_core`: give one benchmark per node type, found hs06 and hs06_per_core"),
            ("hepscore23_per_core = 20", "gpus = 0", "expected a benchmark (hs06, hs06_per_core, hepscore23 or hepscore23_per_core), since other node types have one"),
            ("nodetype = \"old\"", "nodetype = \"ancient\"", "`reference.nodetype`: unknown node type `ancient`; known: old, new"),
            ("priority = \"MINLOSS\"", "priority = \"CHEAPEST\"", "`nodeset.priority`: unknown node set priority type `CHEAPEST`; expected one of FIRSTFIT, BESTFIT, WORSTFIT, BESTRESOURCE, MINLOSS, AFFINITY"),
            ("allocation = \"exclusive\"", "allocation = \"whole\"", "`partition[0].allocation`: expected \"exclusive\" or \"shared\", found \"whole\""),
            ("cores_per_node = 4", "cores_per_node = 9", "`partition[0].cores_per_node`: expected 1..=4 (the fewest cores of a node in the partition), found 9"),
            ("cores_per_node = 4", "cores_per_node = 4\ndefault_gpus_per_node = 1", "`partition[0].default_gpus_per_node`: an exclusive partition's jobs hold every GPU of their nodes"),
            ("allocation = \"exclusive\"", "default_gpus_per_node = 1", "`partition[0].default_gpus_per_node`: expected 0..=0 (the fewest GPUs of a node in the partition), found 1"),
            ("affinity = \"negative\"", "affinity = \"bad\"", "`nodetype[1].affinity`: expected \"negative\" or \"none\""),
            ("count = 3", "count = 0", "`nodetype[0].count`: expected an integer >= 1, found 0"),
            ("attribute = \"PROCSPEED\"", "attribute = \"FEATURE\"", "TOLERANCE applies to PROCSPEED node sets only"),
            ("nodeset = \"ONEOF:FEATURE:switchA,switchB\"", "nodeset = \"ONEOF:SIZE\"", "`partition[0].nodeset`: node set `ONEOF:SIZE`: unknown node set attribute `SIZE`"),
        ];
        for (from, to, want) in cases {
            assert!(HETERO.contains(from), "{from}");
            let e = Cluster::from_toml(&HETERO.replace(from, to), "h.toml").unwrap_err().to_string();
            assert!(e.contains(want), "{to}:\n got  {e}\n want {want}");
            assert!(e.starts_with("h.toml:"), "{e}");
        }
    }

    /// A value that would overflow a count, a total, a time or a float sum is an
    /// error naming the file, line and key, with the range expected.
    #[test]
    fn values_that_would_overflow_name_key_and_range() {
        let power = "name = \"p\"\npower_budget_w = 1000\n\n[[nodetype]]\nname = \"n\"\ncount = 2\ncores = 4\nbase_power_w = 38\nmemory_power_w = 18\ncpu_max_power_w = 60\ncpu_cap_levels_w = [30, 60]\nidle_power_w = 0\n\n[[partition]]\nname = \"b\"\nnodetypes = [\"n\"]\ncanonical_unit = { cores = 1, memory = \"2G\" }\n";
        assert!(Cluster::from_toml(power, "p.toml").is_ok());
        let cases = [
            (HETERO, "nodeset_delay = 600", "nodeset_delay = 4398046511105", "h.toml:2: `nodeset_delay`: expected seconds from 0 to 2^42 = 4398046511104, found 4398046511105"),
            (HETERO, "count = 3", "count = 4194305", "h.toml:16: `nodetype[0].count`: expected at most 4194304 nodes, found 4194305"),
            (EXAMPLE, "cores = 16", "cores = 4294967295", "mini.toml:13: `nodetype[1].nodes`: 2 nodes of 4294967295 cores take the cluster beyond 4294967295 cores: expected at most that in total"),
            (EXAMPLE, "memory = 65536", "memory = 9223372036854775807", "mini.toml:15: `nodetype[1].memory`: 2 nodes of 9223372036854775807 MiB take the cluster beyond 9223372036854775807 MiB"),
            (EXAMPLE, "memory = \"32G\"", "memory = \"1e30T\"", "mini.toml:9: `nodetype[0].memory`: expected a size such as \"512M\", \"32G\" or \"1T\", or MiB from 0 to 9223372036854775807, found \"1e30T\""),
            (EXAMPLE, "memory = 65536", "memory = -1", "`nodetype[1].memory`: expected a size such as"),
            (HETERO, "hs06 = 40", "hs06 = nan", "h.toml:18: `nodetype[0].hs06`: expected a number > 0 and at most 1e12, found NaN"),
            (HETERO, "hs06 = 40", "hs06 = inf", "`nodetype[0].hs06`: expected a number > 0 and at most 1e12, found inf"),
            (HETERO, "hs06 = 40", "hs06 = 1e300", "`nodetype[0].hs06`: expected a number > 0 and at most 1e12, found 1e300"),
            (HETERO, "hs06 = 40", "hs06 = -4", "`nodetype[0].hs06`: expected a number > 0"),
            (HETERO, "hs06 = 40", "hs06 = 0", "`nodetype[0].hs06`: expected a number > 0"),
            (HETERO, "speed = 2000", "speed = 1e13", "`nodetype[0].speed`: expected a number > 0 and at most 1e12"),
            (HETERO, "hepscore23_per_core = 20", "hepscore23_per_core = 0.001", "h.toml:28: `nodetype[1].hepscore23_per_core`: gives a scaling factor of 0.0001 (0.001 HS06 per core over the reference's 10.0): expected 0.001 to 1000"),
            (HETERO, "hepscore23_per_core = 20", "hepscore23_per_core = 20000", "`nodetype[1].hepscore23_per_core`: gives a scaling factor of 2000.0 (20000.0 HS06 per core"),
            (power, "base_power_w = 38", "base_power_w = 1e300", "p.toml:8: `nodetype[0].base_power_w`: expected watts from 0 to 1e12, found 1e300"),
            (power, "idle_power_w = 0", "idle_power_w = nan", "`nodetype[0].idle_power_w`: expected watts from 0 to 1e12, found NaN"),
            (power, "memory_power_w = 18", "memory_power_w = -inf", "`nodetype[0].memory_power_w`: expected watts from 0 to 1e12, found -inf"),
            (power, "memory = \"2G\"", "memory = \"1e30T\"", "p.toml:17: `partition[0].canonical_unit`: memory: expected a size such as"),
        ];
        for (text, from, to, want) in cases {
            assert!(text.contains(from), "{from}");
            let name = if text == HETERO { "h.toml" } else if text == EXAMPLE { "mini.toml" } else { "p.toml" };
            let e = Cluster::from_toml(&text.replace(from, to), name).unwrap_err().to_string();
            assert!(e.contains(want), "{to}:\n got  {e}\n want {want}");
            assert!(e.starts_with(&format!("{name}:")), "{e}");
        }
        // the reference as an abstract strength is bounded the same way
        let abs = HETERO.replace("nodetype = \"old\"", "hs06_per_core = 1e-300");
        let e = Cluster::from_toml(&abs, "h.toml").unwrap_err().to_string();
        assert!(e.contains("`nodetype[0].hs06`: gives a scaling factor of"), "{e}");
    }

    #[test]
    fn memory_sizes() {
        assert_eq!(parse_memory_mb("512M"), Some(512));
        assert_eq!(parse_memory_mb("32G"), Some(32768));
        assert_eq!(parse_memory_mb("1.5T"), Some(1572864));
        assert_eq!(parse_memory_mb("64GB"), Some(65536));
        assert_eq!(parse_memory_mb("64GiB"), Some(65536));
        assert_eq!(parse_memory_mb("x"), None);
        assert_eq!(parse_memory_mb("1e30T"), None, "beyond u64, not saturated");
        assert_eq!(memory_mb(&RawMemory::Text("8796093022207T".into())), Ok((1 << 63) - (1 << 20)));
        assert!(memory_mb(&RawMemory::Text("8796093022208T".into())).is_err(), "2^63 MiB");
    }
}
