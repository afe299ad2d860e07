//! A cluster file's `[[nodetype]]` tables: node types, their nodes, and
//! scaling factors from their benchmarks and the reference.

use super::*;

/// The node types of a cluster file and their nodes, as read (scaling factors
/// not yet known: [`scale`]).
pub(super) struct Types<'a> {
    pub(super) node_types: Vec<NodeType>,
    pub(super) nodes: Vec<Node>,
    pub(super) by_name: BTreeMap<String, usize>,
    /// Node types by name, and the nodes of each (a type's nodes are consecutive).
    pub(super) type_by_name: BTreeMap<&'a str, usize>,
    pub(super) nodes_of_type: Vec<Range<usize>>,
    /// Each type's benchmark per core, its kind and the key that gave it.
    pub(super) benchmarks: Vec<Option<(f64, BenchmarkKind, &'static str)>>,
}

/// `[[nodetype]]`: the node types and their nodes.
pub(super) fn read_node_types<'a>(src: &Source<'_>, raw: &'a RawCluster, max_nodes: usize) -> Result<Types<'a>, ClusterError> {
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
                let names = hostlist::expand_at_most(list, max_nodes - nodes.len()).map_err(|e| match nodes.len() {
                    0 => src.err(at("nodes"), key("nodes"), e.to_string()),
                    before => src.err(at("nodes"), key("nodes"), format!("{e}: the node types before it have {before} nodes, and a cluster at most {max_nodes}")),
                })?;
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
                if c as usize > max_nodes - nodes.len() {
                    let why = match nodes.len() {
                        0 => "a cluster's most".to_string(),
                        before => format!("the node types before it have {before}, and a cluster at most {max_nodes}"),
                    };
                    return Err(src.err(at("count"), key("count"), format!("expected at most {} nodes ({why}), found {c}", max_nodes - nodes.len())));
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
    Ok(Types { node_types, nodes, by_name, type_by_name, nodes_of_type, benchmarks })
}

/// The reference and each node type's scaling factor (benchmark over the
/// reference's).
pub(super) fn scale(src: &Source<'_>, raw: &RawCluster, types: &mut Types<'_>) -> Result<Reference, ClusterError> {
    let Types { node_types, type_by_name, benchmarks, .. } = types;
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
    Ok(reference)
}

