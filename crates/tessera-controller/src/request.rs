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
    /// What a power-aware scheduler may choose for the job (`--moldable`,
    /// `--malleable`, `--power-profile`, `--parallelism`, `--sigma`), if it
    /// says any of it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub power: Option<PowerRequest>,
    /// `--suspend-tstp`: suspension sends SIGTSTP before the freezer (a job
    /// that records its suspensions, as the emulation's sleep job).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub suspend_tstp: bool,
    /// Its layout on nodes (`-N`, `--ntasks-per-node`, `-c`, `--exclusive`).
    #[serde(default, skip_serializing_if = "tessera_core::Shape::is_free")]
    pub shape: tessera_core::Shape,
    /// Nodes it must run on and nodes it may not (`-w`, `-x`), by name.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub include: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub exclude: Vec<String>,
    /// `--no-shell` (salloc's): an allocation without a batch script; its
    /// steps run in it until its client ends it (`POST /v1/jobs/{id}/end`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub no_shell: bool,
    /// `-A`, `--qos`, `--nice`: the account it charges (None: its user's
    /// default), its QOS (None: its association's default) and its nice value.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub account: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub qos: Option<String>,
    #[serde(default, skip_serializing_if = "is_zero_i32")]
    pub nice: i32,
    /// `--reservation`: the advance reservation it runs in.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reservation: Option<String>,
}

fn is_zero_i32(x: &i32) -> bool {
    *x == 0
}

/// An account or QOS name as an option gives it: printable, without white
/// space, `,` or `/`.
fn share_name(option: &str, v: &str, line: Option<usize>) -> Result<String, OptionError> {
    let v = v.trim();
    if v.is_empty() || v.len() > 64 || v.chars().any(|c| c.is_control() || c.is_whitespace() || c == ',' || c == '/') {
        return Err(OptionError { line, ..err(option, v, "a name of at most 64 characters without white space, `,` or `/`") });
    }
    Ok(v.to_string())
}

/// A job's shape and power behaviour, for the power-aware policy (PARM): the
/// node counts it may run on, whether it may be resized while it runs, its
/// application profile (the PASS model's, docs/power.md) and its strong
/// scaling (Downey's average parallelism A and variance σ).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PowerRequest {
    /// A preset's name (LeanMD, Wave2D, Lulesh, AMR, Jacobi2D), or `none`: the
    /// job runs at full power.
    pub profile: String,
    pub n_min: u32,
    pub n_max: u32,
    pub malleable: bool,
    /// Downey's A (default n_max: the job scales to its largest size).
    pub parallelism: f64,
    /// Downey's σ in [0, 1] (default 0).
    pub sigma: f64,
}

impl PowerRequest {
    /// The request of a job that says nothing of its power: rigid on `nodes`
    /// nodes, at full power.
    pub fn rigid(nodes: u32) -> PowerRequest {
        PowerRequest { profile: "none".into(), n_min: nodes, n_max: nodes, malleable: false, parallelism: nodes as f64, sigma: 0.0 }
    }

    /// The engine's PASS job: it takes `estimate_s` on `n_max` nodes at full
    /// CPU power `cpu_max_w` (a resize redistributes 1 GiB per node of its
    /// largest size, as the simulator's rule).
    pub fn job(&self, estimate_s: i64, cpu_max_w: f64) -> tessera_core::power::PowerJob {
        use tessera_core::power::{AppProfile, Downey, PowerJob};
        let app = AppProfile::preset(&self.profile).unwrap_or_else(|| AppProfile::unprofiled(cpu_max_w));
        let scaling = Downey { a: self.parallelism.max(1.0), sigma: self.sigma };
        PowerJob::sized(app, scaling, estimate_s as f64, self.n_min, self.n_max, cpu_max_w, self.n_max as f64 * 1024.0, self.malleable)
    }
}

impl JobRequest {
    /// The engine's spec of job `id` of this request (its own throttle,
    /// singleton key, hold and requeue aside). Under PARM (`parm`) the job is
    /// sized in whole nodes and carries its PASS job: its own power request,
    /// or rigid at full power on the nodes its processors fill.
    pub fn spec(&self, id: u64, cluster: &Cluster, parm: bool) -> tessera_core::JobSpec {
        let mut spec = tessera_core::JobSpec::new(tessera_core::JobId(id), self.procs, self.limit_s);
        spec.partition = Some(self.partition);
        spec.mem_per_proc_mb = self.mem_per_proc_mb;
        spec.gpus_per_node = self.gpus_per_node;
        if parm {
            // the power-aware scheduler chooses its nodes itself
            if let Ok(info) = cluster.power_machine() {
                let cores = info.machine.node_cores.max(1);
                let n = if self.shape.nodes > 0 { self.shape.nodes } else { self.procs.div_ceil(cores) };
                let p = self.power.clone().unwrap_or_else(|| PowerRequest::rigid(n));
                spec.procs = p.n_max.saturating_mul(cores).max(1);
                spec.power = Some(p.job(self.limit_s, info.cpu_max_w));
            }
        } else {
            spec.shape = self.shape;
        }
        spec
    }

    /// The nodes it names (`-w`) and excludes (`-x`), by index in `cluster`.
    pub fn choice(&self, cluster: &Cluster) -> tessera_core::NodeChoice {
        if self.include.is_empty() && self.exclude.is_empty() {
            return tessera_core::NodeChoice::default();
        }
        let by_name: std::collections::HashMap<&str, u32> = cluster.nodes.iter().enumerate().map(|(i, x)| (x.name.as_str(), i as u32)).collect();
        let index = |names: &[String]| -> Vec<u32> { names.iter().filter_map(|n| by_name.get(n.as_str()).copied()).collect() };
        tessera_core::NodeChoice { include: index(&self.include), exclude: index(&self.exclude) }
    }
}

/// The power profiles a job may name.
fn profile_names() -> String {
    let mut v: Vec<&str> = tessera_core::power::PRESETS.iter().map(|p| p.name).collect();
    v.push("none");
    v.join(", ")
}

fn number(option: &str, v: &str, lo: f64, hi: f64) -> Result<f64, OptionError> {
    v.trim()
        .parse::<f64>()
        .ok()
        .filter(|x| x.is_finite() && (lo..=hi).contains(x))
        .ok_or_else(|| err(option, v, &format!("a number from {lo} to {hi}")))
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
    // nodes named (-w) or excluded (-x): hostlists of the partition's nodes
    let names = |o: &str| -> Result<Vec<String>, OptionError> {
        let Some((v, l)) = get(o) else { return Ok(Vec::new()) };
        // no more names than the partition has nodes, each found by name
        let list = tessera_core::hostlist::expand_at_most(v.trim(), part.nodes.len()).map_err(|e| at(err(o, v, &format!("a hostlist such as node[001-004] of partition {}'s nodes ({e})", part.name)), l))?;
        let of_part: std::collections::HashSet<&str> = part.nodes.iter().map(|&k| cluster.nodes[k].name.as_str()).collect();
        if let Some(bad) = list.iter().find(|n| !of_part.contains(n.as_str())) {
            return Err(at(err(o, v, &format!("nodes of partition {} ({} is not)", part.name, tessera_core::quote::bounded(bad))), l));
        }
        Ok(list)
    };
    let (include, exclude) = (names("--nodelist")?, names("--exclude")?);
    let per_node_cap = match get("--ntasks-per-node") {
        Some((v, l)) => Some(count("--ntasks-per-node", v, 1, max_procs).map_err(|e| at(e, l))?),
        None => None,
    };
    // -w names every node it lists: as many nodes at least
    let nodes = match (nodes, include.len() as u32) {
        (None, 0) => None,
        (None, w) => Some(w),
        (Some(n), w) if n < w => {
            let (v, l) = get("--nodes").unwrap();
            return Err(at(err("--nodes", v, &format!("at least the {w} nodes of -w")), l));
        }
        (n, _) => n,
    };
    // tasks as Slurm counts them: -n, else -N × --ntasks-per-node, else one
    // per node of -N, else --ntasks-per-node, else one
    let tasks: u64 = match (get("--ntasks"), nodes, per_node_cap) {
        (Some((v, l)), _, _) => count("--ntasks", v, 1, max_procs).map_err(|e| at(e, l))? as u64,
        (None, Some(n), Some(k)) => n as u64 * k as u64,
        (None, Some(n), None) => n as u64,
        (None, None, Some(k)) => k as u64,
        (None, None, None) => 1,
    };
    let procs = tasks * cpt as u64;
    if procs > max_procs as u64 {
        let (o, (v, l)) = get("--ntasks").map(|x| ("--ntasks", x)).unwrap_or(("--cpus-per-task", get("--cpus-per-task").unwrap_or(("", None))));
        return Err(at(err(o, v, &format!("at most {max_procs} processors in all (partition {})", part.name)), l));
    }
    let procs = procs as u32;
    if let Some(n) = nodes {
        let (v, l) = get("--nodes").unwrap_or(("", None));
        if n as u64 > tasks {
            return Err(at(err("--nodes", v, &format!("at most {tasks}: each node runs one task at least")), l));
        }
        if let Some(k) = per_node_cap.filter(|&k| (n as u64) * (k as u64) < tasks) {
            return Err(at(err("--ntasks-per-node", &k.to_string(), &format!("at least {} for {tasks} tasks on {n} nodes", tasks.div_ceil(n as u64))), l));
        }
    }
    let shape = tessera_core::Shape {
        nodes: nodes.unwrap_or(0),
        tasks_per_node: per_node_cap.unwrap_or(0),
        cpus_per_task: if cpt > 1 { cpt } else { 0 },
        exclusive: get("--exclusive").is_some(),
    };
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
        // the partition's DefMemPerCPU
        (None, None) => part.def_mem_per_cpu_mb,
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
            // UNLIMITED is the partition's MaxTime where it has one, as in Slurm
            Some(0) | None => part.max_time_s.map_or((MAX_LIMIT_S, true), |m| (m, false)),
            Some(s) => match part.max_time_s {
                Some(m) if s > m => return Err(at(err("--time", v, &format!("at most the partition's MaxTime, {} (PartitionTimeLimit)", tessera_core::duration::format_duration(m))), l)),
                _ => (s, false),
            },
        },
        // Slurm's DefaultTime, else MaxTime, else the controller's default
        None => (part.default_time_s.or(part.max_time_s).unwrap_or(default_limit_s), false),
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
    let power = power_request(&get, nodes, part.nodes.len() as u32)?;
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
        suspend_tstp: get("--suspend-tstp").is_some(),
        no_shell: get("--no-shell").is_some(),
        account: get("--account").map(|(v, l)| share_name("--account", v, l)).transpose()?,
        qos: get("--qos").map(|(v, l)| share_name("--qos", v, l)).transpose()?,
        reservation: get("--reservation").map(|(v, l)| share_name("--reservation", v, l)).transpose()?,
        nice: match get("--nice") {
            None => 0,
            Some((v, l)) => v.trim().parse::<i32>().ok().filter(|n| n.unsigned_abs() <= 2_147_483_645).ok_or_else(|| at(err("--nice", v, "an integer from -2147483645 to 2147483645"), l))?,
        },
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
        power,
        shape,
        include,
        exclude,
    })
}

/// The power options of a submission (None: it gives none). `--moldable
/// MIN-MAX` gives the node range (else `-N`, or one node), `--malleable` lets
/// it be resized while it runs (which needs a range).
fn power_request<'a>(get: &dyn Fn(&str) -> Option<(&'a str, Option<usize>)>, nodes: Option<u32>, max_nodes: u32) -> Result<Option<PowerRequest>, OptionError> {
    let keys = ["--moldable", "--malleable", "--power-profile", "--parallelism", "--sigma"];
    if keys.iter().all(|k| get(k).is_none()) {
        return Ok(None);
    }
    let at = |e: OptionError, line: Option<usize>| OptionError { line, ..e };
    let (n_min, n_max) = match get("--moldable") {
        Some((v, l)) => {
            let bad = || at(err("--moldable", v, &format!("a node range MIN-MAX with 1 <= MIN <= MAX <= {max_nodes}")), l);
            let (a, b) = v.trim().split_once('-').ok_or_else(bad)?;
            let (a, b) = (a.trim().parse::<u32>().map_err(|_| bad())?, b.trim().parse::<u32>().map_err(|_| bad())?);
            if a < 1 || a > b || b > max_nodes {
                return Err(bad());
            }
            if let (Some(n), Some((nv, nl))) = (nodes, get("--nodes")) {
                if !(a..=b).contains(&n) {
                    return Err(at(err("--nodes", nv, &format!("to be left out, or within --moldable {a}-{b}")), nl));
                }
            }
            (a, b)
        }
        None => (nodes.unwrap_or(1), nodes.unwrap_or(1)),
    };
    let malleable = get("--malleable");
    if let Some((_, l)) = malleable.filter(|_| n_min == n_max) {
        return Err(at(err("--malleable", "", "--moldable MIN-MAX as well, with MIN < MAX (a job resized while it runs needs a range of sizes)"), l));
    }
    let malleable = malleable.is_some();
    let profile = match get("--power-profile") {
        Some((v, l)) => match tessera_core::power::AppProfile::preset(v.trim()) {
            Some(p) => p.name.to_string(),
            None if v.trim().eq_ignore_ascii_case("none") => "none".to_string(),
            None => return Err(at(err("--power-profile", v, &format!("one of {}", profile_names())), l)),
        },
        None => "none".to_string(),
    };
    let parallelism = match get("--parallelism") {
        Some((v, l)) => number("--parallelism", v, 1.0, 1e9).map_err(|e| at(e, l))?,
        None => n_max as f64,
    };
    let sigma = match get("--sigma") {
        Some((v, l)) => number("--sigma", v, 0.0, 1.0).map_err(|e| at(e, l))?,
        None => 0.0,
    };
    Ok(Some(PowerRequest { profile, n_min, n_max, malleable, parallelism, sigma }))
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
