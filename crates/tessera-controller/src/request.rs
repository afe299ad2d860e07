//! A submission, validated: the script's `#SBATCH` lines and the command line's
//! options (which win) turned into one [`JobRequest`] the state machine can file
//! without further checks, or an [`OptionError`] naming the option, the value and
//! what is allowed. Nothing is stored before this succeeds.

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use tessera_core::{Cluster, NodeSetSpec};
use tessera_proto::api::SubmitRequest;
use tessera_proto::submit::{parse_array, parse_dependency, parse_mem_mib, parse_time_limit, directives, ArraySpec, DependencyKind, OptionError, MAX_LIMIT_S, OPTIONS};

/// Largest script accepted (bytes).
pub const MAX_SCRIPT: usize = 1 << 20;
/// Most environment variables passed with a job.
pub const MAX_ENV: usize = 4096;

/// A validated request: everything the state machine needs to file its jobs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct JobRequest {
    pub name: String,
    pub partition: u16,
    pub procs: u32,
    /// Tasks (`-n`; procs = tasks × cpus per task).
    pub ntasks: u32,
    pub mem_per_proc_mb: u64,
    pub gpus_per_node: u32,
    /// Reference seconds (UNLIMITED: [`MAX_LIMIT_S`]).
    pub limit_s: i64,
    pub unlimited: bool,
    /// The job's node-set request in Moab's syntax (`--nodeset`, or
    /// `ONEOF:FEATURE:x` for `--constraint=x`).
    pub nodeset: Option<String>,
    pub requeue: bool,
    pub hold: bool,
    /// The jobs it waits for: ids, each array job named as its every task (see
    /// the actor's `resolve_dependencies`).
    pub dependencies: Vec<(DependencyKind, u64)>,
    /// Array tasks named `N_T`, until resolved into `dependencies`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub dependency_tasks: Vec<(DependencyKind, u64, u32)>,
    /// `--dependency=singleton`: after every earlier job of its name and user.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub singleton: bool,
    pub array: Option<ArraySpec>,
    pub script: String,
    pub workdir: String,
    /// Output patterns (`%j`, `%x`, `%u`, `%N`, `%A`, `%a`, `%%`), relative to the workdir.
    pub stdout: String,
    pub stderr: String,
    pub env: BTreeMap<String, String>,
    /// The client's key for the submission (see [`SubmitRequest::idempotency_key`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub idempotency_key: Option<String>,
}

/// A digest of a validated request, to tell a repeat of a keyed submission
/// from another submission that reuses its key.
pub fn digest(r: &JobRequest) -> u64 {
    use sha2::Digest;
    // plain strings, numbers and string-keyed maps: serializing cannot fail
    let h = sha2::Sha256::digest(serde_json::to_vec(r).expect("a request serializes"));
    let mut first = [0u8; 8];
    first.copy_from_slice(&h[..8]);
    u64::from_le_bytes(first)
}

/// The longest idempotency key accepted, in characters.
pub const MAX_KEY: usize = 128;

fn err(option: &str, value: &str, expected: &str) -> OptionError {
    OptionError { option: option.into(), value: value.into(), expected: expected.into(), line: None }
}

fn known_list() -> String {
    OPTIONS
        .iter()
        .map(|(s, l, _)| if s.is_empty() { l.to_string() } else { format!("{s}/{l}") })
        .collect::<Vec<_>>()
        .join(", ")
}

/// The long name of an option, or an error listing the known ones.
fn canonical(opt: &str, value: &str) -> Result<(&'static str, bool), OptionError> {
    tessera_proto::submit::option(opt).ok_or_else(|| err(opt, value, &format!("one of the options {}", known_list())))
}

fn count(option: &str, v: &str, lo: u32, hi: u32) -> Result<u32, OptionError> {
    v.trim()
        .parse::<u32>()
        .ok()
        .filter(|n| (lo..=hi).contains(n))
        .ok_or_else(|| err(option, v, &format!("a whole number from {lo} to {hi}")))
}

/// Validate a submission against the cluster. `default_limit_s` is the limit of
/// a job that states none.
pub fn validate(req: &SubmitRequest, cluster: &Cluster, default_limit_s: i64) -> Result<JobRequest, OptionError> {
    if req.script.len() > MAX_SCRIPT {
        return Err(err("script", &format!("{} bytes", req.script.len()), &format!("a script of at most {MAX_SCRIPT} bytes")));
    }
    if req.script.contains('\0') {
        return Err(err("script", "(contains a NUL byte)", "a text script"));
    }
    if req.env.len() > MAX_ENV {
        return Err(err("env", &format!("{} variables", req.env.len()), &format!("at most {MAX_ENV} variables")));
    }
    if !req.workdir.starts_with('/') {
        return Err(err("workdir", &req.workdir, "an absolute path"));
    }
    // directives first, then the command line: the last value of an option wins
    let mut opts: BTreeMap<&'static str, (String, Option<usize>)> = BTreeMap::new();
    let dirs = directives(&req.script)?;
    let cli = req.options.iter().map(|o| (None, o.option.clone(), o.value.clone()));
    for (line, opt, value) in dirs.into_iter().map(|(l, o, v)| (Some(l), o, v)).chain(cli) {
        let (long, takes) = canonical(&opt, &value).map_err(|e| OptionError { line, ..e })?;
        if takes && value.trim().is_empty() {
            return Err(OptionError { line, ..err(&opt, &value, "a value") });
        }
        if !takes && !value.is_empty() {
            return Err(OptionError { line, ..err(&opt, &value, "no value (it is a flag)") });
        }
        opts.insert(long, (value, line));
    }
    let at = |e: OptionError, line: Option<usize>| OptionError { line, ..e };
    let get = |k: &str| opts.get(k).map(|(v, l)| (v.as_str(), *l));

    let partition = match get("--partition") {
        None => cluster.default_partition_index(),
        Some((p, l)) => cluster.partition_index(p.trim()).ok_or_else(|| {
            let names: Vec<&str> = cluster.partitions.iter().map(|p| p.name.as_str()).collect();
            at(err("--partition", p, &format!("one of {}", names.join(", "))), l)
        })?,
    };
    let part = &cluster.partitions[partition];
    let max_procs = part.nodes.iter().map(|&n| cluster.nodes[n].cores).sum::<u32>().max(1);
    let nodes = match get("--nodes") {
        Some((v, l)) => Some(count("--nodes", v, 1, part.nodes.len() as u32).map_err(|e| at(e, l))?),
        None => None,
    };
    let cpt = match get("--cpus-per-task") {
        Some((v, l)) => count("--cpus-per-task", v, 1, max_procs).map_err(|e| at(e, l))?,
        None => 1,
    };
    let per_node: Vec<u32> = part.nodes.iter().map(|&n| cluster.nodes[n].cores).collect();
    let uniform = per_node.windows(2).all(|w| w[0] == w[1]);
    let node_cores = per_node.first().copied().unwrap_or(1);
    let procs = match (get("--ntasks"), nodes) {
        (Some((v, l)), _) => count("--ntasks", v, 1, max_procs).map_err(|e| at(e, l))? as u64 * cpt as u64,
        (None, Some(n)) if uniform => n as u64 * node_cores as u64,
        (None, Some(n)) => {
            let (_, l) = get("--nodes").unwrap();
            return Err(at(err("--nodes", &n.to_string(), "-n/--ntasks as well: the partition's nodes differ in size, so whole nodes are not a fixed number of processors"), l));
        }
        (None, None) => cpt as u64,
    };
    if procs > max_procs as u64 {
        let (o, (v, l)) = get("--ntasks").map(|x| ("--ntasks", x)).unwrap_or(("--cpus-per-task", get("--cpus-per-task").unwrap_or(("", None))));
        return Err(at(err(o, v, &format!("at most {max_procs} processors in all (partition {})", part.name)), l));
    }
    let procs = procs as u32;
    if let (Some(n), true) = (nodes, get("--ntasks").is_some()) {
        // the engine packs processors onto nodes; -N must agree with that packing
        let packed = if uniform { procs.div_ceil(node_cores) } else { 0 };
        if !uniform || (part.exclusive && packed != n) || n > procs {
            let (v, l) = get("--nodes").unwrap();
            let allowed = if uniform && part.exclusive {
                format!("{packed} for {procs} processors on nodes of {node_cores} cores (whole nodes)")
            } else if uniform {
                format!("at most {procs} (one processor per node at least)")
            } else {
                "to be left out: with -n the engine chooses the nodes of a partition whose nodes differ in size".to_string()
            };
            return Err(at(err("--nodes", v, &allowed), l));
        }
    }
    let per_node_procs = nodes.map(|n| procs.div_ceil(n)).unwrap_or(procs);
    let max_mem = part.nodes.iter().map(|&n| cluster.nodes[n].memory_mb).max().unwrap_or(0);
    let mem_per_proc_mb = match (get("--mem"), get("--mem-per-cpu")) {
        (Some(_), Some((v, l))) => return Err(at(err("--mem-per-cpu", v, "to be left out when --mem is given (one or the other)"), l)),
        (Some((v, l)), None) => {
            let m = parse_mem_mib("--mem", v).map_err(|e| at(e, l))?;
            if m > max_mem {
                return Err(at(err("--mem", v, &format!("at most {max_mem}M (the largest node of partition {})", part.name)), l));
            }
            m.div_ceil(per_node_procs as u64)
        }
        (None, Some((v, l))) => parse_mem_mib("--mem-per-cpu", v).map_err(|e| at(e, l))?,
        (None, None) => 0,
    };
    let max_gpus = part.nodes.iter().map(|&n| cluster.nodes[n].gpus).max().unwrap_or(0);
    let gpus_per_node = match (get("--gpus"), get("--gpus-per-node")) {
        (Some(_), Some((v, l))) => return Err(at(err("--gpus-per-node", v, "to be left out when --gpus is given (one or the other)"), l)),
        (Some((v, l)), None) => {
            let g = count("--gpus", v, 0, max_gpus * part.nodes.len() as u32).map_err(|e| at(e, l))?;
            match nodes {
                Some(n) if g % n == 0 && g / n <= max_gpus => g / n,
                Some(n) => return Err(at(err("--gpus", v, &format!("a multiple of -N {n}, at most {max_gpus} per node")), l)),
                None => return Err(at(err("--gpus", v, "-N as well (GPUs are given per node), or --gpus-per-node"), l)),
            }
        }
        (None, Some((v, l))) => count("--gpus-per-node", v, 0, max_gpus).map_err(|e| at(e, l))?,
        (None, None) => part.default_gpus_per_node,
    };
    let (limit_s, unlimited) = match get("--time") {
        Some((v, l)) => match parse_time_limit("--time", v).map_err(|e| at(e, l))? {
            Some(0) | None => (MAX_LIMIT_S, true),
            Some(s) => (s, false),
        },
        None => (default_limit_s, false),
    };
    let nodeset = match (get("--constraint"), get("--nodeset")) {
        (Some(_), Some((v, l))) => return Err(at(err("--nodeset", v, "to be left out when --constraint is given (one or the other)"), l)),
        (Some((v, l)), None) => {
            let known: std::collections::BTreeSet<&str> = cluster.node_types.iter().flat_map(|t| t.features.iter().map(String::as_str)).collect();
            let f = v.trim();
            if !known.contains(f) {
                return Err(at(err("--constraint", v, &format!("one feature of the cluster's nodes ({})", known.into_iter().collect::<Vec<_>>().join(", "))), l));
            }
            Some(format!("ONEOF:FEATURE:{f}"))
        }
        (None, Some((v, l))) => {
            NodeSetSpec::parse_job(v.trim()).map_err(|e| at(err("--nodeset", v, &format!("a node-set request such as ONEOF:FEATURE:ib:eth ({e})")), l))?;
            Some(v.trim().to_string())
        }
        (None, None) => None,
    };
    let (mut dependencies, mut dependency_tasks, mut singleton) = (Vec::new(), Vec::new(), false);
    if let Some((v, l)) = get("--dependency") {
        let d = parse_dependency("--dependency", v).map_err(|e| at(e, l))?;
        singleton = d.singleton;
        for (kind, r) in d.after {
            match r {
                tessera_proto::api::JobRef::Id(id) => dependencies.push((kind, id)),
                tessera_proto::api::JobRef::Task(a, t) => dependency_tasks.push((kind, a, t)),
            }
        }
    }
    let array = match get("--array") {
        Some((v, l)) => Some(parse_array("--array", v).map_err(|e| at(e, l))?),
        None => None,
    };
    let workdir = match get("--chdir") {
        Some((v, l)) if !v.starts_with('/') => return Err(at(err("--chdir", v, "an absolute path"), l)),
        Some((v, _)) => v.to_string(),
        None => req.workdir.clone(),
    };
    let name = get("--job-name").map(|(v, _)| v.to_string()).or_else(|| req.script_name.clone()).unwrap_or_else(|| "script".into());
    let pattern = |k: &str| -> Result<Option<String>, OptionError> {
        match get(k) {
            Some((v, l)) if v.contains('\0') || v.len() > 4096 => Err(at(err(k, v, "a path of at most 4096 bytes"), l)),
            Some((v, _)) => Ok(Some(v.to_string())),
            None => Ok(None),
        }
    };
    let default_out = if array.is_some() { "tessera-%A_%a.out" } else { "tessera-%j.out" };
    let stdout = pattern("--output")?.unwrap_or_else(|| default_out.into());
    let stderr = pattern("--error")?.unwrap_or_else(|| stdout.clone());
    let idempotency_key = match &req.idempotency_key {
        Some(k) if k.is_empty() || k.chars().count() > MAX_KEY || k.chars().any(char::is_control) => {
            return Err(err("idempotency_key", k, &format!("1 to {MAX_KEY} printable characters")));
        }
        k => k.clone(),
    };
    Ok(JobRequest {
        name,
        partition: partition as u16,
        procs,
        ntasks: (procs / cpt).max(1),
        mem_per_proc_mb,
        gpus_per_node,
        limit_s,
        unlimited,
        nodeset,
        requeue: get("--requeue").is_some() && get("--no-requeue").is_none(),
        hold: get("--hold").is_some(),
        dependencies,
        singleton,
        dependency_tasks,
        array,
        // a byte-order mark would hide the #! from the kernel on the node
        script: tessera_proto::submit::without_bom(&req.script).to_string(),
        workdir,
        stdout,
        stderr,
        env: req.env.clone(),
        idempotency_key,
    })
}

/// Expand an output pattern for a job on its first node.
pub fn expand_pattern(p: &str, job: u64, name: &str, user: &str, node: &str, array: Option<(u64, u32)>) -> String {
    let mut out = String::with_capacity(p.len() + 16);
    let mut it = p.chars();
    while let Some(c) = it.next() {
        if c != '%' {
            out.push(c);
            continue;
        }
        match it.next() {
            Some('j') => out.push_str(&job.to_string()),
            Some('x') => out.push_str(name),
            Some('u') => out.push_str(user),
            Some('N') => out.push_str(node),
            Some('A') => out.push_str(&array.map(|a| a.0).unwrap_or(job).to_string()),
            Some('a') => out.push_str(&array.map(|a| a.1.to_string()).unwrap_or_else(|| "4294967294".into())),
            Some('%') => out.push('%'),
            Some(o) => {
                out.push('%');
                out.push(o);
            }
            None => out.push('%'),
        }
    }
    out
}
