//! The cluster model: nodes with cores, memory and GPUs, grouped by node type and
//! into partitions, read from a TOML file with Slurm-style hostlists.
//!
//! Parsing is two-stage (house style): a raw serde struct that rejects unknown keys,
//! then a validated [`Cluster`] with no `Option`s left. Parsing is pure (text in,
//! model out); reading the file is the caller's business.
//!
//! ```toml
//! name = "example"
//!
//! [[nodetype]]
//! name = "std"
//! nodes = "node[001-032]"
//! cores = 8            # or: sockets = 2, cores_per_socket = 4
//! memory = "32G"       # or an integer number of MiB
//! gpus = 0
//!
//! [[partition]]
//! name = "batch"
//! nodes = "node[001-032]"   # or: nodetypes = ["std"]
//! default = true
//! ```

use crate::hostlist;
use serde::Deserialize;
use std::collections::BTreeMap;
use std::fmt;
use std::ops::Range;

/// A validated cluster.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cluster {
    pub name: String,
    pub node_types: Vec<NodeType>,
    pub nodes: Vec<Node>,
    pub partitions: Vec<Partition>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NodeType {
    pub name: String,
    pub sockets: u32,
    pub cores_per_socket: u32,
    pub memory_mb: u64,
    pub gpus: u32,
}

impl NodeType {
    pub fn cores(&self) -> u32 {
        self.sockets * self.cores_per_socket
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Node {
    pub name: String,
    /// Index into [`Cluster::node_types`].
    pub node_type: usize,
    pub cores: u32,
    pub memory_mb: u64,
    pub gpus: u32,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Partition {
    pub name: String,
    /// Indices into [`Cluster::nodes`], in hostlist order.
    pub nodes: Vec<usize>,
    pub default: bool,
}

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
        write!(f, "{}", self.source_name)?;
        if let Some(l) = self.line {
            write!(f, ":{l}")?;
        }
        if !self.key.is_empty() {
            write!(f, ": `{}`", self.key)?;
        }
        write!(f, ": {}", self.message)
    }
}

// ---- stage 1: raw -------------------------------------------------------------

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawCluster {
    name: Option<String>,
    #[serde(default)]
    nodetype: Vec<toml::Spanned<RawNodeType>>,
    #[serde(default)]
    partition: Vec<toml::Spanned<RawPartition>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawNodeType {
    name: String,
    nodes: String,
    cores: Option<i64>,
    sockets: Option<i64>,
    cores_per_socket: Option<i64>,
    memory: Option<RawMemory>,
    gpus: Option<i64>,
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
}

// ---- stage 2: validated ------------------------------------------------------

impl Cluster {
    /// A single pool of `procs` processors: one node, one partition. This is the
    /// machine when no cluster file is given.
    pub fn pool(procs: u32) -> Cluster {
        Cluster {
            name: format!("pool-{procs}"),
            node_types: vec![NodeType { name: "pool".into(), sockets: 1, cores_per_socket: procs, memory_mb: 0, gpus: 0 }],
            nodes: vec![Node { name: "pool".into(), node_type: 0, cores: procs, memory_mb: 0, gpus: 0 }],
            partitions: vec![Partition { name: "pool".into(), nodes: vec![0], default: true }],
        }
    }

    /// Total processors (cores) of the machine.
    pub fn total_cores(&self) -> u64 {
        self.nodes.iter().map(|n| n.cores as u64).sum()
    }

    pub fn default_partition(&self) -> &Partition {
        self.partitions.iter().find(|p| p.default).unwrap_or(&self.partitions[0])
    }

    /// Parse and validate a cluster file's text. `source_name` labels errors.
    pub fn from_toml(text: &str, source_name: &str) -> Result<Cluster, ClusterError> {
        let line_of = |span: Range<usize>| Some(text[..span.start.min(text.len())].matches('\n').count() + 1);
        // the line of `key = ...` inside a table, else the table's own line
        let key_line = |span: Range<usize>, key: &str| {
            let start = span.start.min(text.len());
            let body = &text[start..span.end.min(text.len())];
            let mut offset = start;
            for l in body.split_inclusive('\n') {
                let t = l.trim_start();
                if t.strip_prefix(key).is_some_and(|rest| rest.trim_start().starts_with('=')) {
                    return line_of(offset..offset);
                }
                offset += l.len();
            }
            line_of(span)
        };
        let err = |line: Option<usize>, key: String, message: String| ClusterError {
            source_name: source_name.to_string(),
            line,
            key,
            message,
        };
        let raw: RawCluster = toml::from_str(text).map_err(|e| {
            let line = e.span().and_then(|s| line_of(s));
            err(line, String::new(), e.message().trim().to_string())
        })?;
        if raw.nodetype.is_empty() {
            return Err(err(None, "nodetype".into(), "expected at least one [[nodetype]] table".into()));
        }
        let mut node_types = Vec::new();
        let mut nodes: Vec<Node> = Vec::new();
        let mut by_name: BTreeMap<String, usize> = BTreeMap::new();
        for (i, spanned) in raw.nodetype.iter().enumerate() {
            let t = spanned.get_ref();
            let key = |k: &str| format!("nodetype[{i}].{k}");
            let at = |k: &str| key_line(spanned.span(), k);
            let line = line_of(spanned.span());
            let positive = |k: &str, v: i64| {
                if v >= 1 && v <= u32::MAX as i64 {
                    Ok(v as u32)
                } else {
                    Err(err(at(k), key(k), format!("expected an integer >= 1, found {v}")))
                }
            };
            if t.name.trim().is_empty() {
                return Err(err(at("name"), key("name"), "expected a non-empty name".into()));
            }
            if node_types.iter().any(|nt: &NodeType| nt.name == t.name) {
                return Err(err(at("name"), key("name"), format!("node type `{}` is defined twice", t.name)));
            }
            let (sockets, cores_per_socket) = match (t.cores, t.sockets, t.cores_per_socket) {
                (Some(c), None, None) => (1, positive("cores", c)?),
                (None, Some(s), Some(c)) => (positive("sockets", s)?, positive("cores_per_socket", c)?),
                (Some(c), Some(s), Some(cps)) => {
                    let (c, s, cps) = (positive("cores", c)?, positive("sockets", s)?, positive("cores_per_socket", cps)?);
                    if c != s * cps {
                        return Err(err(at("cores"), key("cores"), format!("cores = {c} but sockets x cores_per_socket = {}", s * cps)));
                    }
                    (s, cps)
                }
                _ => {
                    return Err(err(
                        line,
                        key("cores"),
                        "expected `cores`, or `sockets` and `cores_per_socket`".into(),
                    ))
                }
            };
            if (sockets as u64) * (cores_per_socket as u64) > u32::MAX as u64 {
                return Err(err(at("cores"), key("cores"), "too many cores per node".into()));
            }
            let memory_mb = match &t.memory {
                None => 0,
                Some(RawMemory::Mib(m)) if *m >= 0 => *m as u64,
                Some(RawMemory::Mib(m)) => {
                    return Err(err(at("memory"), key("memory"), format!("expected a size such as \"32G\" or MiB >= 0, found {m}")))
                }
                Some(RawMemory::Text(s)) => parse_memory_mb(s).ok_or_else(|| {
                    err(at("memory"), key("memory"), format!("expected a size such as \"512M\", \"32G\" or \"1T\", found \"{s}\""))
                })?,
            };
            let gpus = match t.gpus {
                None => 0,
                Some(g) if (0..=u32::MAX as i64).contains(&g) => g as u32,
                Some(g) => return Err(err(at("gpus"), key("gpus"), format!("expected an integer >= 0, found {g}"))),
            };
            let names = hostlist::expand(&t.nodes).map_err(|e| err(at("nodes"), key("nodes"), e.to_string()))?;
            let ti = node_types.len();
            node_types.push(NodeType { name: t.name.clone(), sockets, cores_per_socket, memory_mb, gpus });
            for name in names {
                if by_name.contains_key(&name) {
                    return Err(err(at("nodes"), key("nodes"), format!("node `{name}` is listed twice")));
                }
                by_name.insert(name.clone(), nodes.len());
                nodes.push(Node { name, node_type: ti, cores: sockets * cores_per_socket, memory_mb, gpus });
            }
        }
        let mut partitions = Vec::new();
        for (i, spanned) in raw.partition.iter().enumerate() {
            let p = spanned.get_ref();
            let key = |k: &str| format!("partition[{i}].{k}");
            let at = |k: &str| key_line(spanned.span(), k);
            if partitions.iter().any(|q: &Partition| q.name == p.name) {
                return Err(err(at("name"), key("name"), format!("partition `{}` is defined twice", p.name)));
            }
            let members: Vec<usize> = match (&p.nodes, &p.nodetypes) {
                (Some(list), None) => hostlist::expand(list)
                    .map_err(|e| err(at("nodes"), key("nodes"), e.to_string()))?
                    .iter()
                    .map(|n| {
                        by_name.get(n).copied().ok_or_else(|| {
                            err(at("nodes"), key("nodes"), format!("node `{n}` is not defined by any [[nodetype]]"))
                        })
                    })
                    .collect::<Result<_, _>>()?,
                (None, Some(types)) => {
                    let mut v = Vec::new();
                    for t in types {
                        let ti = node_types.iter().position(|nt| &nt.name == t).ok_or_else(|| {
                            let known: Vec<&str> = node_types.iter().map(|nt| nt.name.as_str()).collect();
                            err(at("nodetypes"), key("nodetypes"), format!("unknown node type `{t}`; known: {}", known.join(", ")))
                        })?;
                        v.extend(nodes.iter().enumerate().filter(|(_, n)| n.node_type == ti).map(|(k, _)| k));
                    }
                    v
                }
                _ => return Err(err(at("nodes"), key("nodes"), "expected exactly one of `nodes` (a hostlist) or `nodetypes`".into())),
            };
            if members.is_empty() {
                return Err(err(at("nodes"), key("nodes"), "a partition needs at least one node".into()));
            }
            partitions.push(Partition { name: p.name.clone(), nodes: members, default: p.default });
        }
        if partitions.iter().filter(|p| p.default).count() > 1 {
            return Err(err(None, "partition.default".into(), "at most one partition may be the default".into()));
        }
        if partitions.is_empty() {
            partitions.push(Partition { name: "all".into(), nodes: (0..nodes.len()).collect(), default: true });
        } else if !partitions.iter().any(|p| p.default) {
            partitions[0].default = true;
        }
        Ok(Cluster { name: raw.name.unwrap_or_else(|| "cluster".into()), node_types, nodes, partitions })
    }
}

/// "512M", "32G", "1.5T", "64GB", "2048" (MiB) → MiB.
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
    (v.is_finite() && v >= 0.0).then(|| (v * mult).round() as u64)
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

    #[test]
    fn memory_sizes() {
        assert_eq!(parse_memory_mb("512M"), Some(512));
        assert_eq!(parse_memory_mb("32G"), Some(32768));
        assert_eq!(parse_memory_mb("1.5T"), Some(1572864));
        assert_eq!(parse_memory_mb("64GB"), Some(65536));
        assert_eq!(parse_memory_mb("64GiB"), Some(65536));
        assert_eq!(parse_memory_mb("x"), None);
    }
}
