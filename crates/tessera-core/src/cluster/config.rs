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
use crate::hostlist;
use crate::MAX_TIME;
use crate::nodeset::{NodeSetSpec, SetAttribute, SetPlus, SetPolicy, SetPriority};
use serde::Deserialize;
use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::ops::{Range, RangeInclusive};

mod nodetypes;
mod partitions;
use nodetypes::{read_node_types, scale, Types};
use partitions::read_partitions;

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
    backfill_interval: Option<i64>,
    power_budget_w: Option<f64>,
    reference: Option<toml::Spanned<RawReference>>,
    nodeset: Option<toml::Spanned<RawNodeSet>>,
    #[serde(default)]
    nodetype: Vec<toml::Spanned<RawNodeType>>,
    #[serde(default)]
    partition: Vec<toml::Spanned<RawPartition>>,
    /// Sharing (accounts, QOS, priority) is read by `crate::share`'s own
    /// parser from the same text; the cluster keeps the file it names.
    accounts: Option<String>,
    #[serde(default, rename = "priority")]
    _priority: Option<toml::Value>,
    #[serde(default, rename = "account")]
    _account: Option<toml::Value>,
    #[serde(default, rename = "user")]
    _user: Option<toml::Value>,
    #[serde(default, rename = "qos")]
    _qos: Option<toml::Value>,
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
pub(crate) enum RawMemory {
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
    priority_job_factor: Option<i64>,
    preempt_mode: Option<String>,
    oversubscribe: Option<i64>,
    swf_queue: Option<i64>,
    default_gpus_per_node: Option<i64>,
    def_mem_per_cpu: Option<RawMemory>,
    max_time: Option<String>,
    default_time: Option<String>,
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
pub(crate) struct Source<'a> {
    text: &'a str,
    name: &'a str,
    /// Offsets of the text's newlines, so that finding a line is a binary
    /// search, not a count from the start (every node type asks for its own).
    newlines: Vec<usize>,
}

impl<'a> Source<'a> {
    pub(crate) fn new(text: &'a str, name: &'a str) -> Self {
        Source { text, name, newlines: text.match_indices('\n').map(|(i, _)| i).collect() }
    }

    pub(crate) fn line_of(&self, span: Range<usize>) -> Option<usize> {
        let start = span.start.min(self.text.len());
        Some(self.newlines.partition_point(|&i| i < start) + 1)
    }

    /// The line of `key = ...` inside a table, else the table's own line.
    pub(crate) fn key_line(&self, span: Range<usize>, key: &str) -> Option<usize> {
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

    pub(crate) fn err(&self, line: Option<usize>, key: impl Into<String>, message: impl Into<String>) -> ClusterError {
        ClusterError { source_name: self.name.to_string(), line, key: key.into(), message: message.into() }
    }
}

impl Cluster {
    /// Parse and validate a cluster file's text. `source_name` labels errors.
    pub fn from_toml(text: &str, source_name: &str) -> Result<Cluster, ClusterError> {
        Cluster::from_toml_at_most(text, source_name, super::MAX_NODES)
    }

    /// [`Cluster::from_toml`] for a cluster of at most `max_nodes` nodes
    /// (at most [`super::MAX_NODES`]), whose partitions name at most
    /// [`super::MEMBERS_PER_NODE`] × `max_nodes` in all: an error, before the
    /// names are built, where the file asks for more.
    pub fn from_toml_at_most(text: &str, source_name: &str, max_nodes: usize) -> Result<Cluster, ClusterError> {
        let max_nodes = max_nodes.min(super::MAX_NODES);
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
        let mut types = read_node_types(&src, &raw, max_nodes)?;
        let reference = scale(&src, &raw, &mut types)?;
        let partitions = read_partitions(&src, &raw, &types, site_nodeset.as_ref(), max_nodes * super::MEMBERS_PER_NODE)?;
        let Types { node_types, nodes, .. } = types;
        let time_slice_s = match raw.time_slice {
            None => DEFAULT_TIME_SLICE_S,
            Some(d) if (1..=86_400).contains(&d) => d,
            Some(d) => return Err(src.err(src.key_line(0..text.len(), "time_slice"), "time_slice", format!("expected seconds 1..=86400, found {d}"))),
        };
        let backfill_interval_s = match raw.backfill_interval {
            None => None,
            Some(d) if (1..=86_400).contains(&d) => Some(d),
            Some(d) => return Err(src.err(src.key_line(0..text.len(), "backfill_interval"), "backfill_interval", format!("expected seconds 1..=86400, found {d}"))),
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
            backfill_interval_s,
            accounts_file: raw.accounts,
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
pub(crate) fn plain_name(name: &str) -> Result<(), String> {
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
pub(crate) fn memory_mb(raw: &RawMemory) -> Result<u64, String> {
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
    fn a_partitions_default_memory_per_cpu_is_read_and_checked() {
        const MEM: &str = "[[nodetype]]\nname = \"std\"\nnodes = \"n[1-4]\"\ncores = 8\nmemory = \"32G\"\n\n[[nodetype]]\nname = \"big\"\nnodes = \"b[1-2]\"\ncores = 8\nmemory = \"256G\"\n\n[[partition]]\nname = \"batch\"\nnodetypes = [\"std\", \"big\"]\ndef_mem_per_cpu = \"2G\"\n";
        let c = Cluster::from_toml(MEM, "m.toml").unwrap();
        assert_eq!(c.partitions[0].def_mem_per_cpu_mb, 2048);
        assert_eq!(Cluster::from_toml(&MEM.replace("\"2G\"", "4096"), "m.toml").unwrap().partitions[0].def_mem_per_cpu_mb, 4096, "MiB as a number");
        assert_eq!(Cluster::from_toml(&MEM.replace("def_mem_per_cpu = \"2G\"\n", ""), "m.toml").unwrap().partitions[0].def_mem_per_cpu_mb, 0, "none by default");
        for (from, to, want) in [
            ("\"2G\"", "\"300G\"", "m.toml:16: `partition[0].def_mem_per_cpu`: at most 262144M (the largest node of the partition: a one-processor job must fit), found 307200M"),
            ("\"2G\"", "\"2 apples\"", "`partition[0].def_mem_per_cpu`: expected a size such as \"512M\""),
            ("def_mem", "allocation = \"exclusive\"\ndef_mem", "`partition[0].def_mem_per_cpu`: an exclusive partition's jobs hold their nodes whole; leave it out"),
        ] {
            let e = Cluster::from_toml(&MEM.replace(from, to), "m.toml").unwrap_err().to_string();
            assert!(e.contains(want), "{to}:\n got  {e}\n want {want}");
        }
        let none = MEM.replace("memory = \"32G\"\n", "").replace("memory = \"256G\"\n", "");
        let e = Cluster::from_toml(&none, "m.toml").unwrap_err().to_string();
        assert!(e.contains("`partition[0].def_mem_per_cpu`: the partition's nodes track no memory"), "{e}");
    }

    #[test]
    fn a_partitions_max_and_default_time_are_read_in_slurms_syntax_and_checked() {
        const P: &str = "[[nodetype]]\nname = \"n\"\ncount = 2\ncores = 4\n\n[[partition]]\nname = \"batch\"\nnodetypes = [\"n\"]\nmax_time = \"2-00:00:00\"\ndefault_time = \"60\"\n";
        let p = &Cluster::from_toml(P, "t.toml").unwrap().partitions[0];
        assert_eq!((p.max_time_s, p.default_time_s), (Some(2 * 86_400), Some(3600)), "days-hours:minutes:seconds, and minutes");
        let p = &Cluster::from_toml(&P.replace("\"2-00:00:00\"", "\"UNLIMITED\""), "t.toml").unwrap().partitions[0];
        assert_eq!(p.max_time_s, None, "UNLIMITED is no limit");
        for (from, to, want) in [
            ("\"60\"", "\"3-00:00:00\"", "t.toml:10: `partition[0].default_time`: at most max_time, 2-00:00:00 (a job given the default must be allowed to run), found 3-00:00:00"),
            ("\"2-00:00:00\"", "\"two days\"", "t.toml:9: `partition[0].max_time`: expected a duration in Slurm's syntax (minutes, minutes:seconds"),
        ] {
            let e = Cluster::from_toml(&P.replace(from, to), "t.toml").unwrap_err().to_string();
            assert!(e.contains(want), "{to}:\n got  {e}\n want {want}");
        }
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

    /// Nodes beyond the bound, in a count, a hostlist or the partitions'
    /// lists, are refused where the file passes it, before they are built.
    #[test]
    fn a_cluster_beyond_its_bound_is_refused_where_it_passes_it() {
        let types = "[[nodetype]]\nname = \"a\"\ncount = 60\ncores = 1\n\n[[nodetype]]\nname = \"m\"\nnodes = \"m[1-40]\"\ncores = 1\n";
        assert_eq!(Cluster::from_toml_at_most(types, "b.toml", 100).unwrap().nodes.len(), 100);
        let e = |text: &str| Cluster::from_toml_at_most(text, "b.toml", 100).unwrap_err().to_string();
        assert_eq!(e(&types.replace("m[1-40]", "m[1-41]")), "b.toml:8: `nodetype[1].nodes`: invalid hostlist `m[1-41]`: range `1-41` is larger than 40: the node types before it have 60 nodes, and a cluster at most 100");
        assert_eq!(e(&types.replace("nodes = \"m[1-40]\"", "count = 41")), "b.toml:8: `nodetype[1].count`: expected at most 40 nodes (the node types before it have 60, and a cluster at most 100), found 41");
        // 8 partitions of every node are allowed, a ninth is too many
        let parts = |k: usize, last: &str| (1..k).map(|i| format!("\n[[partition]]\nname = \"p{i}\"\nnodetypes = [\"a\", \"m\"]\n")).collect::<String>() + last;
        assert_eq!(Cluster::from_toml_at_most(&(types.to_string() + &parts(9, "")), "b.toml", 100).unwrap().partitions.len(), 8);
        let msg = "the partitions to here name more than 800 nodes in all (8 for each node a cluster may have; a node counts once for each partition that holds it)";
        assert!(e(&(types.to_string() + &parts(10, ""))).ends_with(&format!("`partition[8].nodetypes`: {msg}")), "{}", e(&(types.to_string() + &parts(10, ""))));
        let listed = e(&(types.to_string() + &parts(9, "\n[[partition]]\nname = \"x\"\nnodes = \"m1\"\n")));
        assert!(listed.contains("`partition[8].nodes`: invalid hostlist `m1`") && listed.ends_with(msg), "{listed}");
    }

    /// A value that would overflow a count, a total, a time or a float sum is an
    /// error naming the file, line and key, with the range expected.
    #[test]
    fn values_that_would_overflow_name_key_and_range() {
        let power = "name = \"p\"\npower_budget_w = 1000\n\n[[nodetype]]\nname = \"n\"\ncount = 2\ncores = 4\nbase_power_w = 38\nmemory_power_w = 18\ncpu_max_power_w = 60\ncpu_cap_levels_w = [30, 60]\nidle_power_w = 0\n\n[[partition]]\nname = \"b\"\nnodetypes = [\"n\"]\ncanonical_unit = { cores = 1, memory = \"2G\" }\n";
        assert!(Cluster::from_toml(power, "p.toml").is_ok());
        let cases = [
            (HETERO, "nodeset_delay = 600", "nodeset_delay = 4398046511105", "h.toml:2: `nodeset_delay`: expected seconds from 0 to 2^42 = 4398046511104, found 4398046511105"),
            (HETERO, "count = 3", "count = 1048577", "h.toml:16: `nodetype[0].count`: expected at most 1048576 nodes (a cluster's most), found 1048577"),
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
