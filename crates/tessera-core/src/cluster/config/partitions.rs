//! A cluster file's `[[partition]]` tables.

use super::*;
use crate::Time;

/// `[[partition]]`: the partitions (one of every node, `all`, if the file has
/// none), their default, and the rule that a gang partition's nodes are its own.
/// The partitions name at most `max_members` nodes in all (a node once for
/// each partition that holds it).
pub(super) fn read_partitions(src: &Source<'_>, raw: &RawCluster, types: &Types<'_>, site_nodeset: Option<&NodeSetSpec>, max_members: usize) -> Result<Vec<Partition>, ClusterError> {
    let Types { node_types, nodes, by_name, type_by_name, nodes_of_type, .. } = types;
    let mut partitions = Vec::new();
    let mut partition_names = BTreeSet::new();
    let mut queues: BTreeMap<i64, usize> = BTreeMap::new();
    // the last partition (index + 1) that listed each node and node type, for
    // duplicates; and how many partitions hold each node
    let (mut node_seen, mut type_seen) = (vec![0usize; nodes.len()], vec![0usize; node_types.len()]);
    let mut holders = vec![0u32; nodes.len()];
    let mut named = 0usize;
    let too_many = || format!("the partitions to here name more than {max_members} nodes in all ({} for each node a cluster may have; a node counts once for each partition that holds it)", super::super::MEMBERS_PER_NODE);
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
                let names = hostlist::expand_at_most(list, max_members - named).map_err(|e| match named {
                    0 => src.err(at("nodes"), key("nodes"), e.to_string()),
                    _ => src.err(at("nodes"), key("nodes"), format!("{e}: {}", too_many())),
                })?;
                for n in names {
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
                    if named + v.len() + nodes_of_type[ti].len() > max_members {
                        return Err(src.err(at("nodetypes"), key("nodetypes"), too_many()));
                    }
                    v.extend(nodes_of_type[ti].clone());
                }
                v
            }
            _ => return Err(src.err(at("nodes"), key("nodes"), "expected exactly one of `nodes` (a hostlist) or `nodetypes`")),
        };
        if members.is_empty() {
            return Err(src.err(at("nodes"), key("nodes"), "a partition needs at least one node"));
        }
        named += members.len();
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
                let spec = spec.with_site_options(site_nodeset);
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
        let largest_memory = members.iter().map(|&n| nodes[n].memory_mb).max().unwrap();
        let def_mem_per_cpu_mb = match &p.def_mem_per_cpu {
            None => 0,
            Some(m) => {
                let bad = |m: String| src.err(at("def_mem_per_cpu"), key("def_mem_per_cpu"), m);
                let mb = memory_mb(m).map_err(bad)?;
                if exclusive {
                    return Err(bad("an exclusive partition's jobs hold their nodes whole; leave it out".into()));
                }
                if largest_memory == 0 {
                    return Err(bad("the partition's nodes track no memory (give their node types a `memory`)".into()));
                }
                if mb > largest_memory {
                    return Err(bad(format!("at most {largest_memory}M (the largest node of the partition: a one-processor job must fit), found {mb}M")));
                }
                mb
            }
        };
        let duration = |k: &str, v: &Option<String>| -> Result<Option<Time>, ClusterError> {
            match v {
                None => Ok(None),
                Some(t) => crate::duration::parse_duration(t).map_err(|()| src.err(at(k), key(k), format!("expected a duration in Slurm's syntax ({}), found `{t}`", crate::duration::DURATION_FORMS))),
            }
        };
        let max_time_s = duration("max_time", &p.max_time)?;
        let default_time_s = duration("default_time", &p.default_time)?;
        if let (Some(d), Some(m)) = (default_time_s, max_time_s) {
            if d > m {
                return Err(src.err(at("default_time"), key("default_time"), format!("at most max_time, {} (a job given the default must be allowed to run), found {}", crate::duration::format_duration(m), crate::duration::format_duration(d))));
            }
        }
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
        let priority_job_factor = match p.priority_job_factor {
            None => 1,
            Some(t) if (0..=u16::MAX as i64).contains(&t) => t as u32,
            Some(t) => return Err(src.err(at("priority_job_factor"), key("priority_job_factor"), format!("expected an integer 0..=65535, found {t}"))),
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
            priority_job_factor,
            preempt,
            oversubscribe,
            swf_queue: p.swf_queue,
            default_gpus_per_node,
            def_mem_per_cpu_mb,
            max_time_s,
            default_time_s,
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
    Ok(partitions)
}

