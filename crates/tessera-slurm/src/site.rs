//! A slurm.conf's nodes and partitions as a Tessera cluster file.
//!
//! Each NodeName line becomes a node type (split where its nodes get
//! different benchmarks from the factors file), each PartitionName line a
//! partition. What a cluster file cannot say is listed with its file and
//! line, never dropped silently: Slurm's daemon settings, its scheduling
//! policy (options of `sim run`, not of a cluster), and node or partition
//! settings Tessera does not model. The result is read back by the cluster
//! file's own parser before it is handed out, so a file that is written is
//! one the simulator and `tessera publish` accept.

use crate::conf::{q, ImportError, Line, Place};
use crate::factors::Factors;
use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::fmt::Write as _;
use std::rc::Rc;
use tessera_core::cluster::{Cluster, MAX_NODES, MEMBERS_PER_NODE};
use tessera_core::duration::{format_duration, parse_duration, DURATION_FORMS};
use tessera_core::hostlist;

/// Why a setting is not in the cluster file.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Left {
    /// It changes how jobs are placed or limited, and Tessera does not model it.
    NotModelled,
    /// Scheduling policy: given to the simulator or the controller as options.
    Policy,
    /// How Slurm's daemons run (paths, ports, logs, plugins): nothing to schedule.
    Daemon,
}

impl Left {
    pub fn heading(self) -> &'static str {
        match self {
            Left::NotModelled => "not modelled by Tessera (placement or limits differ from Slurm's here)",
            Left::Policy => "scheduling policy (options of `tessera sim run` and the controller, not of a cluster file)",
            Left::Daemon => "how Slurm's daemons run (nothing to schedule)",
        }
    }
}

/// A setting the cluster file does not hold, where it was written, and why.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Note {
    pub at: Place,
    pub setting: String,
    pub why: String,
    pub left: Left,
}

/// What an import gives: the cluster file's text, the cluster it describes,
/// and the settings left out.
#[derive(Debug)]
pub struct Imported {
    pub toml: String,
    pub cluster: Cluster,
    pub notes: Vec<Note>,
}

/// A setting's value and where it was written.
type Settings = BTreeMap<String, (String, Place)>;

/// One NodeName line's hardware.
struct NodeLine {
    at: Place,
    written: String,
    names: Vec<String>,
    sockets: u32,
    cores_per_socket: u32,
    memory_mb: Option<u64>,
    gpus: u32,
    features: Vec<String>,
    weight: u64,
}

/// A node type to write.
struct TypeOut {
    name: String,
    nodes: Vec<String>,
    benchmark: Option<f64>,
}

const NODE_KEYS_DAEMON: &[&str] = &["nodehostname", "nodeaddr", "port", "bcastaddr", "reason", "mcslabel", "cpubind"];
const NODE_KEYS_NOT_MODELLED: &[&str] = &["tmpdisk", "cpuspeclist", "corespeccount", "memspeclimit", "activefeatures", "features_active", "procs", "state"];
const GLOBAL_POLICY_PREFIXES: &[&str] = &["priority", "scheduler", "sched", "preempt", "fairshare", "enforcepartlimits", "overtimelimit", "killwait", "maxjobcount", "minjobage", "maxarraysize", "accountingstorageenforce", "defmempernode", "maxmempercpu", "maxmempernode", "gres", "jobacctgather", "accountingstoragetres"];

/// A 32- or 64-bit count as Slurm reads it: a trailing K is × 1024.
fn kilo(v: &(String, Place)) -> (String, Place) {
    let t = v.0.trim();
    match t.strip_suffix(['k', 'K']).and_then(|d| d.parse::<u64>().ok()).and_then(|n| n.checked_mul(1024)) {
        Some(n) => (n.to_string(), v.1.clone()),
        None => v.clone(),
    }
}

fn lower(s: &str) -> String {
    s.to_ascii_lowercase()
}

fn num<T: std::str::FromStr + PartialOrd>(v: &(String, Place), key: &str, min: T, max: T, what: &str) -> Result<T, ImportError> {
    match v.0.trim().parse::<T>() {
        Ok(x) if x >= min && x <= max => Ok(x),
        _ => Err(ImportError::new(&v.1, key, format!("expected {what}, found {}", q(&v.0)))),
    }
}

/// A Gres count: digits with an optional K, M, G suffix (powers of 1024, as Slurm).
fn gres_count(s: &str) -> Option<u64> {
    let (digits, mult) = match s.chars().last()? {
        'k' | 'K' => (&s[..s.len() - 1], 1u64 << 10),
        'm' | 'M' => (&s[..s.len() - 1], 1 << 20),
        'g' | 'G' => (&s[..s.len() - 1], 1 << 30),
        _ => (s, 1),
    };
    digits.parse::<u64>().ok()?.checked_mul(mult)
}

/// Gres=gpu:a100:4,gpu:2,mps:100: the GPUs counted, and what else it names.
fn gres(v: &(String, Place)) -> Result<(u32, Vec<String>), ImportError> {
    let (mut gpus, mut other) = (0u64, Vec::new());
    for item in v.0.split(',').map(str::trim).filter(|s| !s.is_empty()) {
        // a trailing "(S:0-1)" names sockets (gres.conf's business)
        let item = item.split('(').next().unwrap_or(item);
        let parts: Vec<&str> = item.split(':').collect();
        // name, name:count, name:type, name:type:count (and flags such as
        // no_consume before the count)
        let count = match parts.as_slice() {
            [_] => Some(1),
            [_, x] => Some(gres_count(x).unwrap_or(1)),
            [_, .., x] => gres_count(x),
            [] => None,
        };
        let Some(count) = count.filter(|_| !parts[0].is_empty()) else {
            return Err(ImportError::new(&v.1, "Gres", format!("expected name[:type][:count] items such as gpu:a100:4, found {}", q(item))));
        };
        if lower(parts[0]) == "gpu" && !parts.contains(&"no_consume") {
            gpus += count;
        } else {
            other.push(item.to_string());
        }
    }
    let gpus = u32::try_from(gpus).map_err(|_| ImportError::new(&v.1, "Gres", format!("expected at most {} GPUs, found {gpus}", u32::MAX)))?;
    Ok((gpus, other))
}

/// A line's own settings (a key written twice: the last).
fn own(line: &Line) -> Settings {
    line.pairs.iter().map(|p| (lower(&p.key), (p.value.clone(), line.at.clone()))).collect()
}

/// A line's settings over the defaults in force where it was written
/// (`NodeName=DEFAULT` lines before it), shared with the other lines that
/// see the same defaults rather than copied into each.
struct Merged {
    own: Settings,
    defaults: Rc<Settings>,
}

impl Merged {
    fn get(&self, k: &str) -> Option<&(String, Place)> {
        self.own.get(k).or_else(|| self.defaults.get(k))
    }
}

/// Why a NodeName setting is not in the cluster file (None: it is).
fn node_key_left(k: &str) -> Option<(Left, &'static str)> {
    const KNOWN: &[&str] = &["nodename", "cpus", "boards", "socketsperboard", "sockets", "corespersocket", "threadspercore", "realmemory", "gres", "features", "availablefeatures", "weight"];
    Some(if KNOWN.contains(&k) {
        return None;
    } else if NODE_KEYS_DAEMON.contains(&k) {
        (Left::Daemon, "how Slurm reaches the node")
    } else if k == "state" {
        (Left::NotModelled, "every node is imported up; set node states on the running controller (`tessera node drain|down`)")
    } else if NODE_KEYS_NOT_MODELLED.contains(&k) {
        (Left::NotModelled, "not modelled")
    } else {
        (Left::NotModelled, "not a setting Tessera knows")
    })
}

/// Why a PartitionName setting is not in the cluster file (None: it is).
fn partition_key_left(k: &str) -> Option<&'static str> {
    const KNOWN: &[&str] = &["partitionname", "nodes", "default", "maxtime", "defaulttime", "prioritytier", "priorityjobfactor", "priority", "preemptmode", "oversubscribe", "shared", "defmempercpu"];
    Some(match k {
        _ if KNOWN.contains(&k) => return None,
        "state" => "partition states are not part of a cluster file",
        "allowaccounts" | "allowgroups" | "allowqos" | "denyaccounts" | "denyqos" | "allowalloc" => "who may use a partition is not modelled: every association may",
        "hidden" => "every partition is shown",
        "defmempernode" => "memory per node by default is not modelled (DefMemPerCPU is)",
        _ => "not modelled",
    })
}

fn note(notes: &mut Vec<Note>, at: &Place, key: &str, value: &str, left: Left, why: &str) {
    notes.push(Note { at: at.clone(), setting: format!("{key}={value}"), why: why.to_string(), left });
}

/// A node type name from a host name: its letters before the number.
fn stem(name: &str) -> String {
    let s = name.trim_end_matches(|c: char| c.is_ascii_digit() || c == '-' || c == '_' || c == '.');
    if s.is_empty() {
        "node".to_string()
    } else {
        s.to_string()
    }
}

/// The cluster file for `lines` (a slurm.conf read by [`crate::conf::read`]).
/// `out_name` names the file in the errors of its own check.
pub fn import(lines: &[Line], factors: Option<&Factors>, out_name: &str) -> Result<Imported, ImportError> {
    import_at_most(lines, factors, out_name, MAX_NODES)
}

/// [`import`] of a cluster of at most `max_nodes` nodes (at most
/// [`MAX_NODES`], about 2 s of import), whose partitions name at most
/// [`MEMBERS_PER_NODE`] × `max_nodes` in all: an error, before the names are
/// built, where the file asks for more.
pub fn import_at_most(lines: &[Line], factors: Option<&Factors>, out_name: &str, max_nodes: usize) -> Result<Imported, ImportError> {
    let max_nodes = max_nodes.min(MAX_NODES);
    let max_members = max_nodes.saturating_mul(MEMBERS_PER_NODE);
    let mut notes = Vec::new();
    let mut globals: Settings = BTreeMap::new();
    let (mut node_defaults, mut part_defaults): (Rc<Settings>, Rc<Settings>) = Default::default();
    let mut node_lines: Vec<(Merged, &Line)> = Vec::new();
    let mut part_lines: Vec<(Merged, &Line)> = Vec::new();
    let mut nodesets: BTreeMap<String, (Settings, &Line)> = BTreeMap::new();
    // each key as written, by where it was written and its lowercase form
    let mut written_keys: HashMap<(&Place, String), &str> = HashMap::new();
    for line in lines {
        for p in &line.pairs {
            written_keys.entry((&line.at, lower(&p.key))).or_insert(&p.key);
        }
    }
    let original_key = |at: &Place, k: &str| written_keys.get(&(at, k.to_string())).map_or_else(|| k.to_string(), |w| w.to_string());
    for line in lines {
        let first = &line.pairs[0];
        match line.kind().as_str() {
            // a default's setting that the cluster file does not hold is
            // noted once, where written
            "nodename" if first.value.eq_ignore_ascii_case("default") => {
                let d = Rc::make_mut(&mut node_defaults);
                for p in &line.pairs[1..] {
                    d.insert(lower(&p.key), (p.value.clone(), line.at.clone()));
                }
                for (k, (v, at)) in &own(line) {
                    if let Some((left, why)) = node_key_left(k) {
                        note(&mut notes, at, &original_key(at, k), v, left, why);
                    }
                }
            }
            "nodename" => node_lines.push((Merged { own: own(line), defaults: node_defaults.clone() }, line)),
            "partitionname" if first.value.eq_ignore_ascii_case("default") => {
                let d = Rc::make_mut(&mut part_defaults);
                for p in &line.pairs[1..] {
                    d.insert(lower(&p.key), (p.value.clone(), line.at.clone()));
                }
                for (k, (v, at)) in &own(line) {
                    if let Some(why) = partition_key_left(k) {
                        note(&mut notes, at, &original_key(at, k), v, Left::NotModelled, why);
                    }
                }
            }
            "partitionname" => part_lines.push((Merged { own: own(line), defaults: part_defaults.clone() }, line)),
            "nodeset" => {
                nodesets.insert(first.value.clone(), (own(line), line));
            }
            "downnodes" | "frontendname" | "switchname" => note(&mut notes, &line.at, &first.key, &first.value, Left::NotModelled, "node states and front ends are not part of a cluster file"),
            _ => {
                for p in &line.pairs {
                    globals.insert(lower(&p.key), (p.value.clone(), line.at.clone()));
                }
            }
        }
    }
    let global = |k: &str| globals.get(k).map(|(v, _)| v.as_str());
    // 22.05's defaults: select/linear; cons_res and cons_tres without
    // SelectTypeParameters use CR_Core_Memory
    let select = global("selecttype").map(lower).unwrap_or_else(|| "select/linear".into());
    let linear = select == "select/linear";
    let select_params = global("selecttypeparameters").map(lower);
    let memory_tracked = match &select_params {
        None => !linear,
        Some(p) => p.contains("memory"),
    };
    let preempt_type = global("preempttype").map(lower).unwrap_or_else(|| "preempt/none".into());
    // 22.05's default scheduler is sched/backfill, every bf_interval seconds
    // (30 by default; -1 turns the backfill loop off)
    let sched = global("schedulertype").map(lower).unwrap_or_else(|| "sched/backfill".into());
    let bf_option = globals.get("schedulerparameters").and_then(|(v, at)| v.split(',').find_map(|o| lower(o.trim()).strip_prefix("bf_interval=").map(|x| (x.to_string(), at.clone()))));
    let backfill_interval = match (sched.as_str(), bf_option) {
        ("sched/backfill", None) => Some(30),
        ("sched/backfill", Some((x, _))) if x.trim() == "-1" => None,
        ("sched/backfill", Some(v)) => Some(num::<i64>(&v, "SchedulerParameters", 1, 10_800, "bf_interval in seconds 1..=10800, or -1")?),
        _ => None,
    };
    let mut mapped_globals: BTreeSet<&str> = ["clustername", "selecttype", "selecttypeparameters", "preempttype", "preemptmode", "defmempercpu", "schedulertimeslice"].into();
    if backfill_interval.is_some() {
        mapped_globals.insert("schedulertype");
    }
    if !memory_tracked {
        mapped_globals.remove("defmempercpu");
    }
    for (k, (v, at)) in &globals {
        if mapped_globals.contains(k.as_str()) {
            continue;
        }
        let left = if GLOBAL_POLICY_PREFIXES.iter().any(|p| k.starts_with(p)) { Left::Policy } else { Left::Daemon };
        let why = match k.as_str() {
            "defmempercpu" => "memory is not a consumable resource (SelectTypeParameters has no _Memory), so Slurm does not hold it either",
            "schedulertype" if sched == "sched/builtin" => "first come, first served without backfilling: simulate it with --policy fcfs",
            "schedulertype" => "backfilling turned off (bf_interval=-1): simulate it with --policy fcfs",
            "schedulerparameters" if backfill_interval.is_some() => "bf_interval is written as backfill_interval; the other options are not modelled",
            _ if left == Left::Policy => "a policy setting",
            _ => "a daemon setting",
        };
        note(&mut notes, at, &original_key(at, k), v, left, why);
    }
    if preempt_type == "preempt/qos" {
        if let Some((v, at)) = globals.get("preempttype") {
            note(&mut notes, at, "PreemptType", v, Left::NotModelled, "preemption by QOS is set in Tessera's accounts file, not from slurm.conf: partitions are imported without preemption");
        }
    }

    // ---- nodes --------------------------------------------------------------
    let mut seen: HashMap<String, &Place> = HashMap::new();
    // a default's setting noted once, where written
    let mut noted: HashSet<(&str, &Place)> = HashSet::new();
    let mut nodes: Vec<NodeLine> = Vec::new();
    for (s, line) in &node_lines {
        let at = &line.at;
        let written = line.pairs[0].value.clone();
        let names = hostlist::expand_at_most(&written, max_nodes - seen.len()).map_err(|e| match seen.len() {
            0 => ImportError::new(at, "NodeName", e.to_string()),
            _ => ImportError::new(at, "NodeName", format!("{e}: {} nodes are defined before it, and a cluster has at most {max_nodes}", seen.len())),
        })?;
        for n in &names {
            hostlist::check_name(n).map_err(|m| ImportError::new(at, "NodeName", m))?;
            if let Some(first) = seen.insert(n.clone(), at) {
                return Err(ImportError::new(at, "NodeName", format!("node {} is already defined at {first}", q(n))));
            }
        }
        let get = |k: &str| s.get(k);
        let threads = get("threadspercore").map(|v| num::<u32>(v, "ThreadsPerCore", 1, 1024, "an integer >= 1")).transpose()?.unwrap_or(1);
        let boards = get("boards").map(|v| num::<u32>(v, "Boards", 1, 1 << 16, "an integer >= 1")).transpose()?.unwrap_or(1);
        let cpus = get("cpus").or(get("procs")).map(|v| num::<u32>(v, "CPUs", 1, 1 << 24, "an integer >= 1")).transpose()?;
        let sockets_given = match (get("sockets"), get("socketsperboard")) {
            (Some(v), _) => Some(num::<u32>(v, "Sockets", 1, 1 << 16, "an integer >= 1")?),
            (None, Some(v)) => Some(num::<u32>(v, "SocketsPerBoard", 1, 1 << 16, "an integer >= 1")? * boards),
            (None, None) => None,
        };
        let cps_given = get("corespersocket").map(|v| num::<u32>(v, "CoresPerSocket", 1, 1 << 20, "an integer >= 1")).transpose()?;
        // slurm.conf(5): Sockets, when omitted, is inferred from CPUs,
        // CoresPerSocket and ThreadsPerCore; CPUs alone is that many sockets
        // of one core
        let cps = cps_given.unwrap_or(1);
        let sockets = match (sockets_given, cpus) {
            (Some(s), _) => s,
            (None, Some(c)) if c % (cps * threads) == 0 => c / (cps * threads),
            _ => boards,
        };
        let cores = sockets as u64 * cps as u64;
        if let Some(c) = cpus {
            let logical = cores * threads as u64;
            if c as u64 != logical && c as u64 != cores {
                let v = get("cpus").or(get("procs")).unwrap();
                note(&mut notes, &v.1, "CPUs", &v.0, Left::NotModelled, &format!("differs from Sockets × CoresPerSocket × ThreadsPerCore = {logical}: Tessera gives the node its {cores} cores"));
            }
        }
        if threads > 1 {
            let v = get("threadspercore").unwrap();
            if noted.insert(("threadspercore", &v.1)) {
                note(&mut notes, &v.1, "ThreadsPerCore", &v.0, Left::NotModelled, "Tessera allocates whole cores: a job's processors are cores, not hardware threads");
            }
        }
        let memory_mb = match get("realmemory") {
            Some(v) if memory_tracked => Some(num::<u64>(&kilo(v), "RealMemory", 1, (1 << 63) - 1, "MiB, an integer >= 1 (a K suffix is × 1024)")?),
            Some(v) => {
                if noted.insert(("realmemory", &v.1)) {
                    note(&mut notes, &v.1, "RealMemory", &v.0, Left::NotModelled, "memory is not a consumable resource (SelectTypeParameters has no _Memory): nodes are imported without memory, as Slurm schedules them");
                }
                None
            }
            None => None,
        };
        let (gpus, other_gres) = match get("gres") {
            Some(v) => gres(v)?,
            None => (0, Vec::new()),
        };
        if !other_gres.is_empty() {
            let v = get("gres").unwrap();
            note(&mut notes, &v.1, "Gres", &v.0, Left::NotModelled, &format!("only GPUs are counted; not {}", other_gres.join(", ")));
        }
        let features: Vec<String> = get("features").or(get("availablefeatures")).map(|v| v.0.split(',').map(str::trim).filter(|f| !f.is_empty()).map(String::from).collect()).unwrap_or_default();
        let weight = get("weight").map(|v| if v.0.eq_ignore_ascii_case("infinite") { Ok(u32::MAX as u64 - 1) } else { num::<u64>(&kilo(v), "Weight", 0, u32::MAX as u64, "an integer 0..=4294967295 or INFINITE") }).transpose()?.unwrap_or(1);
        // the line's own settings not carried over (its defaults' are noted where written)
        for (k, (v, p)) in &s.own {
            if let Some((left, why)) = node_key_left(k) {
                note(&mut notes, p, &original_key(p, k), v, left, why);
            }
        }
        nodes.push(NodeLine { at: at.clone(), written, names, sockets, cores_per_socket: cps, memory_mb, gpus, features, weight });
    }
    if nodes.is_empty() {
        return Err(ImportError::new(&Place { file: lines.first().map_or(String::new(), |l| l.at.file.clone()), line: 0 }, "NodeName", "expected at least one NodeName line"));
    }

    // ---- benchmarks, node types ---------------------------------------------
    let mut used_keys: BTreeSet<&str> = BTreeSet::new();
    let mut types: Vec<(usize, TypeOut)> = Vec::new();
    let mut taken: BTreeSet<String> = BTreeSet::new();
    let mut next_k: HashMap<String, usize> = HashMap::new();
    for (li, n) in nodes.iter().enumerate() {
        let mut groups: Vec<(Option<f64>, Vec<String>)> = Vec::new();
        let mut group_of: HashMap<Option<u64>, usize> = HashMap::new();
        for name in &n.names {
            let b = match factors {
                None => None,
                Some(f) => {
                    let by_name = f.benchmarks.get_key_value(name.as_str()).or_else(|| f.benchmarks.get_key_value(n.written.as_str()));
                    let found = match by_name {
                        Some((k, v)) => Some((k.as_str(), v.0)),
                        None => {
                            let hits: Vec<(&str, f64)> = n.features.iter().filter_map(|ft| f.benchmarks.get_key_value(ft.as_str()).map(|(k, v)| (k.as_str(), v.0))).collect();
                            if let Some(&(k2, b2)) = hits.iter().find(|h| h.1 != hits[0].1) {
                                return Err(ImportError::new(&n.at, "Features", format!("node {} has features {} ({} HS06 per core) and {} ({b2}) in {}: name the node or its NodeName there to choose", q(name), q(hits[0].0), hits[0].1, q(k2), f.file)));
                            }
                            hits.first().copied()
                        }
                    };
                    let Some((k, b)) = found else {
                        let feats = if n.features.is_empty() { String::from("it has no features") } else { format!("features: {}", n.features.join(", ")) };
                        return Err(ImportError::new(&n.at, "NodeName", format!("no benchmark for node {} in {}: give its name, its NodeName {} or one of its features under [benchmarks] ({})", q(name), f.file, q(&n.written), tessera_core::quote::clip(&feats, 256))));
                    };
                    used_keys.insert(k);
                    Some(b)
                }
            };
            let g = *group_of.entry(b.map(f64::to_bits)).or_insert_with(|| {
                groups.push((b, Vec::new()));
                groups.len() - 1
            });
            groups[g].1.push(name.clone());
        }
        for (b, names) in groups {
            let base = stem(&names[0]);
            let mut name = base.clone();
            // the next number to try after a stem taken before
            let k = next_k.entry(base.clone()).or_insert(2);
            while !taken.insert(name.clone()) {
                name = format!("{base}-{k}");
                *k += 1;
            }
            types.push((li, TypeOut { name, nodes: names, benchmark: b }));
        }
    }
    if let Some(f) = factors {
        for (k, (v, line)) in &f.benchmarks {
            if !used_keys.contains(k.as_str()) {
                note(&mut notes, &Place { file: f.file.clone(), line: *line }, &format!("benchmarks.{k}"), &v.to_string(), Left::NotModelled, "names no node, NodeName or feature that needed it");
            }
        }
    }
    // Slurm allocates the nodes of lowest Weight first; Tessera fills a
    // partition's nodes in order, so node types go lightest first
    types.sort_by_key(|(li, _)| nodes[*li].weight);
    let cluster_nodes: Vec<&str> = types.iter().flat_map(|(_, t)| t.nodes.iter().map(String::as_str)).collect();
    // a node's place in that order, looked up once per member
    let place: HashMap<&str, usize> = cluster_nodes.iter().enumerate().map(|(i, n)| (*n, i)).collect();

    // ---- partitions ---------------------------------------------------------
    struct PartOut {
        name: String,
        at: Place,
        /// its place in `part_lines`
        line: usize,
        /// places in `cluster_nodes`, in order
        nodes: Vec<usize>,
        default: bool,
        exclusive: bool,
        max_time: Option<i64>,
        default_time: Option<i64>,
        tier: Option<u32>,
        job_factor: Option<u32>,
        preempt: &'static str,
        oversubscribe: Option<u32>,
        def_mem: Option<u64>,
    }
    let mut parts: Vec<PartOut> = Vec::new();
    // nodes named by the partitions so far, a node once for each that names it
    let mut named = 0usize;
    let too_many = |at: &Place| ImportError::new(at, "Nodes", format!("the partitions to here name more than {max_members} nodes in all ({MEMBERS_PER_NODE} for each of the {max_nodes} nodes a cluster may have; a node counts once for each partition that holds it)"));
    for (li, (s, line)) in part_lines.iter().enumerate() {
        let at = &line.at;
        let name = line.pairs[0].value.clone();
        let get = |k: &str| s.get(k);
        let Some(list) = get("nodes") else {
            note(&mut notes, at, "PartitionName", &name, Left::NotModelled, "a partition without Nodes holds no node: left out");
            continue;
        };
        // members by their place in the cluster's order, duplicates dropped
        let mut members: Vec<usize> = Vec::new();
        if list.0.eq_ignore_ascii_case("all") {
            members.extend(0..cluster_nodes.len());
            if named + members.len() > max_members {
                return Err(too_many(&list.1));
            }
        } else {
            for item in hostlist::expand_at_most(&list.0, max_members - named).map_err(|e| ImportError::new(&list.1, "Nodes", e.to_string()))? {
                if let Some((ns, _)) = nodesets.get(&item) {
                    let set_nodes: Vec<String> = match (ns.get("nodes"), ns.get("feature")) {
                        (Some(v), _) if v.0.eq_ignore_ascii_case("all") => cluster_nodes.iter().map(|n| n.to_string()).collect(),
                        (Some(v), _) => hostlist::expand_at_most(&v.0, max_members - named).map_err(|e| ImportError::new(&v.1, "Nodes", e.to_string()))?,
                        (None, Some(f)) => nodes.iter().filter(|n| n.features.iter().any(|x| x == &f.0)).flat_map(|n| n.names.iter().cloned()).collect(),
                        (None, None) => Vec::new(),
                    };
                    for n in set_nodes {
                        match place.get(n.as_str()) {
                            Some(&i) => members.push(i),
                            None => return Err(ImportError::new(&list.1, "Nodes", format!("NodeSet {} names node {}, which no NodeName line defines", q(&item), q(&n)))),
                        }
                    }
                } else if let Some(&i) = place.get(item.as_str()) {
                    members.push(i);
                } else {
                    return Err(ImportError::new(&list.1, "Nodes", format!("node {} is defined by no NodeName line (nor is it a NodeSet)", q(&item))));
                }
                if named + members.len() > max_members {
                    return Err(too_many(&list.1));
                }
            }
        }
        named += members.len();
        // Slurm allocates the lightest nodes first, whatever the order they are listed in
        members.sort_unstable();
        members.dedup();
        if members.is_empty() {
            note(&mut notes, at, "PartitionName", &name, Left::NotModelled, "a partition without nodes: left out");
            continue;
        }
        let yes = |k: &str| get(k).is_some_and(|v| v.0.eq_ignore_ascii_case("yes"));
        let over = get("oversubscribe").or(get("shared"));
        let over_kind = over.map(|v| lower(v.0.split(':').next().unwrap_or(""))).unwrap_or_else(|| "no".into());
        let over_n = over.and_then(|v| v.0.split_once(':')).map(|(_, n)| n).map(|n| num::<u32>(&(n.to_string(), over.unwrap().1.clone()), "OverSubscribe", 1, 64, "FORCE:N with N 1..=64")).transpose()?;
        if !["no", "yes", "exclusive", "force"].contains(&over_kind.as_str()) {
            let v = over.unwrap();
            return Err(ImportError::new(&v.1, "OverSubscribe", format!("expected NO, YES[:N], EXCLUSIVE or FORCE[:N], found {}", q(&v.0))));
        }
        let exclusive = over_kind == "exclusive" || linear;
        let time = |k: &str, key: &str| -> Result<Option<i64>, ImportError> {
            match get(k) {
                None => Ok(None),
                Some(v) => parse_duration(&v.0).map_err(|()| ImportError::new(&v.1, key, format!("expected {DURATION_FORMS}, found {}", q(&v.0)))),
            }
        };
        let max_time = time("maxtime", "MaxTime")?;
        let mut default_time = time("defaulttime", "DefaultTime")?;
        if let (Some(d), Some(m)) = (default_time, max_time) {
            if d > m {
                let v = get("defaulttime").unwrap();
                note(&mut notes, &v.1, "DefaultTime", &v.0, Left::NotModelled, "above MaxTime: jobs get MaxTime");
                default_time = None;
            }
        }
        // the older Priority sets both
        let tier = get("prioritytier").or(get("priority")).map(|v| num::<u32>(v, "PriorityTier", 0, 65_533, "an integer 0..=65533")).transpose()?;
        let job_factor = get("priorityjobfactor").or(get("priority")).map(|v| num::<u32>(v, "PriorityJobFactor", 0, 65_533, "an integer 0..=65533")).transpose()?;
        // PreemptMode: the partition's, else the cluster's; it acts only with
        // PreemptType=preempt/partition_prio
        let mode_v = get("preemptmode").or(globals.get("preemptmode"));
        // ON is SUSPEND and CLUSTER is OFF (Slurm's aliases)
        let modes: Vec<String> = mode_v
            .map(|v| {
                v.0.split(',')
                    .map(|m| match lower(m.trim()).as_str() {
                        "on" => "suspend".to_string(),
                        "cluster" => "off".to_string(),
                        m => m.to_string(),
                    })
                    .collect()
            })
            .unwrap_or_else(|| vec!["off".into()]);
        for m in &modes {
            if !["off", "cancel", "requeue", "suspend", "gang", "within", "priority"].contains(&m.as_str()) {
                let v = mode_v.unwrap();
                return Err(ImportError::new(&v.1, "PreemptMode", format!("expected OFF, CANCEL, REQUEUE, SUSPEND or GANG (comma-separated), found {}", q(&v.0))));
            }
        }
        let has = |m: &str| modes.iter().any(|x| x == m);
        let partition_prio = preempt_type == "preempt/partition_prio";
        let gang = has("gang") && over_kind == "force" && !exclusive;
        let preempt = if gang {
            "gang"
        } else if has("suspend") && partition_prio {
            "suspend"
        } else {
            "off"
        };
        if let Some(v) = mode_v {
            if (has("cancel") || has("requeue")) && partition_prio {
                note(&mut notes, &v.1, "PreemptMode", &v.0, Left::NotModelled, &format!("partition `{name}`: Tessera preempts by suspension only: imported as {preempt}"));
            } else if has("suspend") && !partition_prio && !gang && get("preemptmode").is_some() {
                note(&mut notes, &v.1, "PreemptMode", &v.0, Left::NotModelled, &format!("partition `{name}`: PreemptType is {preempt_type}, so Slurm does not preempt by partition either: imported as off"));
            } else if has("gang") && !gang && get("preemptmode").is_some() {
                note(&mut notes, &v.1, "PreemptMode", &v.0, Left::NotModelled, &format!("partition `{name}`: gang scheduling needs OverSubscribe=FORCE on a shared partition: imported as {preempt}"));
            }
        }
        if let Some(v) = over {
            if over_kind == "yes" || (over_kind == "force" && !gang) {
                note(&mut notes, &v.1, "OverSubscribe", &v.0, Left::NotModelled, &format!("partition `{name}`: cores are shared by jobs only under gang scheduling (PreemptMode=GANG with FORCE) here: imported as one job per core"));
            }
        }
        // DefMemPerNode, where set, wins over DefMemPerCPU (read_config.c)
        let per_node = get("defmempernode").or(globals.get("defmempernode"));
        let def_mem_v = get("defmempercpu").or(globals.get("defmempercpu")).filter(|_| per_node.is_none());
        let def_mem = match def_mem_v {
            Some(v) if memory_tracked && !exclusive => Some(num::<u64>(v, "DefMemPerCPU", 0, (1 << 63) - 1, "MiB, an integer")?).filter(|&m| m > 0),
            Some(v) if memory_tracked && get("defmempercpu").is_some() => {
                note(&mut notes, &v.1, "DefMemPerCPU", &v.0, Left::NotModelled, &format!("partition `{name}` gives its jobs whole nodes, memory included"));
                None
            }
            Some(v) if get("defmempercpu").is_some() => {
                note(&mut notes, &v.1, "DefMemPerCPU", &v.0, Left::NotModelled, "memory is not a consumable resource (SelectTypeParameters has no _Memory)");
                None
            }
            _ => None,
        };
        for (k, (v, p)) in &s.own {
            if let Some(why) = partition_key_left(k) {
                note(&mut notes, p, &original_key(p, k), v, Left::NotModelled, &format!("partition `{name}`: {why}"));
            }
        }
        parts.push(PartOut { name, at: at.clone(), line: li, nodes: members, default: yes("default"), exclusive, max_time, default_time, tier, job_factor, preempt, oversubscribe: if gang { over_n.or(Some(4)) } else { None }, def_mem });
    }
    // Tessera's gang partitions own their nodes: one that shares them is
    // imported without time slicing. The first two partitions that hold
    // each node tell which do.
    let mut holders: Vec<[usize; 2]> = vec![[usize::MAX; 2]; cluster_nodes.len()];
    for (k, p) in parts.iter().enumerate() {
        for &n in &p.nodes {
            let h = &mut holders[n];
            if h[0] == usize::MAX {
                h[0] = k;
            } else if h[1] == usize::MAX {
                h[1] = k;
            }
        }
    }
    for g in 0..parts.len() {
        if parts[g].preempt != "gang" {
            continue;
        }
        // the first other partition holding one of these nodes
        let other = parts[g].nodes.iter().filter_map(|&n| holders[n].into_iter().find(|&k| k != g && k != usize::MAX)).min();
        if let Some(other) = other.map(|k| parts[k].name.clone()) {
            let (at, v) = part_lines[parts[g].line].0.get("preemptmode").or(globals.get("preemptmode")).map_or((parts[g].at.clone(), "GANG".to_string()), |(v, p)| (p.clone(), v.clone()));
            note(&mut notes, &at, "PreemptMode", &v, Left::NotModelled, &format!("partition `{}`: gang scheduling here needs nodes no other partition holds, and `{other}` holds some: imported without it", parts[g].name));
            parts[g].preempt = "off";
            parts[g].oversubscribe = None;
        }
    }
    // Slurm takes the last partition marked Default=YES
    if let Some(last) = parts.iter().rposition(|p| p.default) {
        for (i, p) in parts.iter_mut().enumerate() {
            if p.default && i != last {
                note(&mut notes, &p.at, "Default", "YES", Left::NotModelled, &format!("partition `{}`: a later partition is the default, as Slurm takes the last", p.name));
                p.default = false;
            }
        }
    }

    // ---- the file -----------------------------------------------------------
    let q = |s: &str| toml::Value::String(s.to_string()).to_string();
    let mut t = String::new();
    let first_file = lines.first().map_or("slurm.conf", |l| l.at.file.as_str());
    let _ = writeln!(t, "# Imported from {first_file} by `tessera import slurm-conf`.");
    if let Some(f) = factors {
        let _ = writeln!(t, "# Benchmarks (HEP-SPEC06 per core) from {}.", f.file);
    }
    if !notes.is_empty() {
        let _ = writeln!(t, "# {} settings are not represented here; `tessera import slurm-conf` lists them.", notes.len());
    }
    let mut origin: Vec<(usize, Place)> = Vec::new();
    // the next line's number, counted on from where the last count stopped
    let (mut counted, mut lines_before) = (0usize, 0usize);
    let mut line_no = |t: &String| {
        lines_before += t.as_bytes()[counted..].iter().filter(|&&b| b == b'\n').count();
        counted = t.len();
        lines_before + 1
    };
    if let Some((v, _)) = globals.get("clustername") {
        let _ = writeln!(t, "name = {}", q(v));
    }
    if let Some((v, at)) = globals.get("schedulertimeslice") {
        let ts = num::<i64>(&(v.clone(), at.clone()), "SchedulerTimeSlice", 5, 86_400, "seconds 5..=86400")?;
        let _ = writeln!(t, "time_slice = {ts}");
    }
    if let Some(bf) = backfill_interval {
        let _ = writeln!(t, "backfill_interval = {bf}    # SchedulerType=sched/backfill, bf_interval");
    }
    if let Some(r) = factors.and_then(|f| f.reference) {
        let _ = writeln!(t, "\n[reference]\nhs06_per_core = {r:?}");
    }
    for (li, ty) in &types {
        let n = &nodes[*li];
        origin.push((line_no(&t) + 1, n.at.clone()));
        let _ = writeln!(t, "\n[[nodetype]]    # {}", n.at);
        let _ = writeln!(t, "name = {}", q(&ty.name));
        let _ = writeln!(t, "nodes = {}", q(&hostlist::compress(&ty.nodes)));
        let _ = writeln!(t, "sockets = {}\ncores_per_socket = {}", n.sockets, n.cores_per_socket);
        if let Some(m) = n.memory_mb {
            let _ = writeln!(t, "memory = {m}    # MiB");
        }
        if n.gpus > 0 {
            let _ = writeln!(t, "gpus = {}", n.gpus);
        }
        if !n.features.is_empty() {
            let _ = writeln!(t, "features = [{}]", n.features.iter().map(|f| q(f)).collect::<Vec<_>>().join(", "));
        }
        if let Some(b) = ty.benchmark {
            let _ = writeln!(t, "hs06_per_core = {b:?}");
        }
    }
    for (k, p) in parts.iter().enumerate() {
        origin.push((line_no(&t) + 1, p.at.clone()));
        let _ = writeln!(t, "\n[[partition]]    # {}", p.at);
        let _ = writeln!(t, "name = {}", q(&p.name));
        let names: Vec<&str> = p.nodes.iter().map(|&n| cluster_nodes[n]).collect();
        let _ = writeln!(t, "nodes = {}", q(&hostlist::compress(&names)));
        if p.default {
            let _ = writeln!(t, "default = true");
        }
        let _ = writeln!(t, "allocation = {}", q(if p.exclusive { "exclusive" } else { "shared" }));
        // partitions numbered in order, as `tessera import sacct` writes a job's
        // partition in its SWF queue field
        let _ = writeln!(t, "swf_queue = {}", k + 1);
        if let Some(m) = p.max_time {
            let _ = writeln!(t, "max_time = {}", q(&format_duration(m)));
        }
        if let Some(d) = p.default_time {
            let _ = writeln!(t, "default_time = {}", q(&format_duration(d)));
        }
        if let Some(x) = p.tier {
            let _ = writeln!(t, "priority_tier = {x}");
        }
        if let Some(x) = p.job_factor {
            let _ = writeln!(t, "priority_job_factor = {x}");
        }
        if p.preempt != "off" {
            let _ = writeln!(t, "preempt_mode = {}", q(p.preempt));
        }
        if let Some(o) = p.oversubscribe {
            let _ = writeln!(t, "oversubscribe = {o}");
        }
        if let Some(m) = p.def_mem {
            let _ = writeln!(t, "def_mem_per_cpu = {m}    # MiB");
        }
    }
    let cluster = Cluster::from_toml_at_most(&t, out_name, max_nodes).map_err(|e| {
        let at = e.line.and_then(|l| origin.iter().rev().find(|(start, _)| *start <= l)).map(|(_, p)| p.clone()).unwrap_or_else(|| Place { file: first_file.to_string(), line: 0 });
        ImportError::new(&at, &e.key, format!("cannot be a Tessera cluster: {}", e.message))
    })?;
    notes.sort_by(|a, b| (a.left, &a.at.file, a.at.line).cmp(&(b.left, &b.at.file, b.at.line)));
    Ok(Imported { toml: t, cluster, notes })
}

/// The notes as a report, grouped by why they were left out.
pub fn report(notes: &[Note]) -> String {
    let mut out = String::new();
    let mut last = None;
    for n in notes {
        if last != Some(n.left) {
            let count = notes.iter().filter(|x| x.left == n.left).count();
            let _ = writeln!(out, "{count} {}:", n.left.heading());
            last = Some(n.left);
        }
        let _ = writeln!(out, "  {}: {}: {}", n.at, n.setting, n.why);
    }
    out
}
