//! One simulation from a [`RunSpec`]: read (or generate) the jobs, build the
//! machine, simulate ([`execute`]); then, for `sim run`, write what was asked
//! ([`write_outputs`]). Comparisons and sweeps run their variants through
//! [`execute`] too.

use crate::spec::RunSpec;
use anyhow::{bail, Context, Result};
use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;
use tessera_core::nodeset::SetAttribute;
use tessera_core::share::{PriorityKind, SharingConfig};
use tessera_core::{Cluster, NodeSetSpec, PolicyKind};
use tessera_report::run::RunData;
use tessera_sim::output::{write_jobs_csv, write_swf};
use tessera_sim::workload::{default_capacity, prepare_on, Machine};
use tessera_sim::{simulate, Summary};
use tessera_workload::lublin::{generate, LublinParams};
use tessera_workload::swf::{SwfHeader, SwfReader, SwfRecord};

/// The embedded default cluster (also at examples/clusters/default.toml).
pub const DEFAULT_CLUSTER: &str = include_str!("../../../examples/clusters/default.toml");
/// Where the embedded default cluster comes from, to name it.
pub const DEFAULT_CLUSTER_PATH: &str = "examples/clusters/default.toml";
/// Jobs and seed of the embedded default workload.
pub const DEFAULT_JOBS: usize = 10_000;
pub const DEFAULT_SEED: u64 = 1;

pub fn load_cluster(path: &Path) -> Result<Cluster> {
    let text = std::fs::read_to_string(path).with_context(|| format!("reading cluster file {}", path.display()))?;
    Ok(Cluster::from_toml(&text, &path.display().to_string())?)
}

/// The sharing a run uses: the accounts file given, else the cluster file's
/// own tables or the accounts file it names (relative to it).
pub fn load_sharing(accounts: Option<&Path>, cluster: Option<&Path>) -> Result<Option<SharingConfig>> {
    if let Some(p) = accounts {
        let text = std::fs::read_to_string(p).with_context(|| format!("reading accounts file {}", p.display()))?;
        return SharingConfig::from_toml(&text, &p.display().to_string())?
            .with_context(|| format!("{}: no [priority], [[qos]], [[account]] or [[user]] tables", p.display()))
            .map(Some);
    }
    let Some(p) = cluster else { return Ok(None) };
    let text = std::fs::read_to_string(p).with_context(|| format!("reading cluster file {}", p.display()))?;
    let named = Cluster::from_toml(&text, &p.display().to_string())?.accounts_file;
    let dir = p.parent().map(Path::to_path_buf).unwrap_or_default();
    Ok(SharingConfig::of_cluster(&text, &p.display().to_string(), named.as_deref(), |f| {
        let path = dir.join(f);
        std::fs::read_to_string(&path).map(|t| (t, path.display().to_string())).map_err(|e| format!("reading accounts file {}: {e}", path.display()))
    })?)
}

pub fn default_cluster() -> Cluster {
    Cluster::from_toml(DEFAULT_CLUSTER, DEFAULT_CLUSTER_PATH).expect("the embedded default cluster is valid")
}

/// An experiment's trace: the one given, else `default` from the shared traces.
pub fn trace_or_shared(given: &Option<PathBuf>, default: &str) -> Result<PathBuf> {
    match given {
        Some(t) => Ok(tessera_workload::traces::resolve(t)?),
        None => tessera_workload::traces::find_shared(default)
            .with_context(|| format!("no --trace given and {default} is not in the shared traces directory (set TESSERA_TRACES)")),
    }
}

/// An experiment's cluster and how to name it: the file given, else the embedded
/// copy `text` of the repository's `path`.
pub fn cluster_or_embedded(given: &Option<PathBuf>, path: &str, text: &str) -> Result<(String, Cluster)> {
    match given {
        Some(p) => Ok((p.display().to_string(), load_cluster(p)?)),
        None => Ok((path.to_string(), Cluster::from_toml(text, path).expect("the embedded cluster is valid"))),
    }
}

fn read_trace(path: &Path, lenient: bool) -> Result<(SwfHeader, Vec<SwfRecord>)> {
    let (header, records, report) = SwfReader::read_file(path, lenient)?;
    if report.skipped > 0 {
        eprintln!("{}: {report}", path.display());
    }
    Ok((header, records))
}

/// The node set of the spec, with the cluster's site options unless overridden.
fn nodeset_of(a: &RunSpec, cluster: &Cluster) -> Result<Option<NodeSetSpec>> {
    let Some(text) = &a.nodeset else { return Ok(None) };
    let mut spec = NodeSetSpec::parse_job(text)?.with_site_options(cluster.nodeset.as_ref());
    if a.nodeset_optional {
        spec.optional = true;
    }
    if let Some(t) = a.nodeset_tolerance {
        spec.tolerance = Some(t);
    }
    if let Some(p) = &a.nodeset_priority {
        spec.priority = p.parse().map_err(|m: String| anyhow::anyhow!("--nodeset-priority: {m}"))?;
    }
    if let Some(p) = &a.nodeset_plus {
        spec.plus = p.parse().map_err(|m: String| anyhow::anyhow!("--nodeset-plus: {m}"))?;
    }
    spec.validate().map_err(|m| anyhow::anyhow!("--nodeset {text}: {m}"))?;
    // a value no node has is a typo or not a node set at all (`--nodeset garbage`)
    let (what, present): (&str, Vec<String>) = match spec.attribute {
        SetAttribute::Feature => ("feature", cluster.node_types.iter().flat_map(|t| t.features.iter().cloned()).collect()),
        SetAttribute::Network => ("network", cluster.node_types.iter().filter_map(|t| t.network.clone()).collect()),
        SetAttribute::ProcSpeed | SetAttribute::Memory => ("", Vec::new()),
    };
    if !what.is_empty() {
        if let Some(v) = spec.list.iter().find(|v| !present.contains(v)) {
            let mut known: Vec<&str> = present.iter().map(String::as_str).collect();
            known.sort_unstable();
            known.dedup();
            let known = if known.is_empty() { "none".to_string() } else { known.join(", ") };
            bail!(
                "--nodeset {}: no node of cluster `{}` has {what} {}: expected one of its {what}s ({known}), in a Slurm constraint (`a|b`, `[a|b]`) or Moab's form (`ONEOF:FEATURE:a:b`)",
                tessera_workload::quote::bounded(text),
                cluster.name,
                tessera_workload::quote::bounded(v)
            );
        }
    }
    Ok(Some(spec))
}

/// The accounts and priority of a run: `--accounts`, else the cluster
/// file's; `--priority` overrides their queue order. Without either (or
/// with `--priority fifo` alone) the run has none and orders by submission.
fn sharing_asked(a: &RunSpec) -> Result<Option<Asked>> {
    let kind: Option<PriorityKind> = a.priority.as_deref().map(|p| p.parse().map_err(|e: String| anyhow::anyhow!("--priority {p}: {e}"))).transpose()?;
    let config = load_sharing(a.accounts.as_deref(), a.cluster.as_deref())?;
    if config.is_none() && kind != Some(PriorityKind::Multifactor) {
        if let Some(p) = &a.usage_from {
            bail!("--usage-from {}: a history seeds fair share: give accounts (--accounts, or a cluster file with them) or --priority multifactor", p.display());
        }
        return Ok(None);
    }
    if a.policy == PolicyKind::Parm {
        bail!("accounts and multifactor priority order a queue; policy parm decides its own order (use fcfs, easy or conservative)");
    }
    Ok(Some(Asked { config, kind }))
}

/// The accounts (or none) and the queue order a run asks for.
struct Asked {
    config: Option<SharingConfig>,
    kind: Option<PriorityKind>,
}

/// The sharing of a run that asked for it ([`sharing_asked`]), on its workload.
fn sharing_of(a: &RunSpec, Asked { config, kind }: Asked, w: &tessera_sim::Workload, header: &SwfHeader) -> Result<tessera_sim::share::SimSharing> {
    let names = tessera_sim::share::TraceNames::of(header);
    let mut s = match config {
        Some(c) => {
            let priority = tessera_core::share::PriorityConfig { kind: kind.unwrap_or(c.priority.kind), ..c.priority };
            let source = a.accounts.as_ref().or(a.cluster.as_ref()).map(|p| p.display().to_string()).unwrap_or_default();
            tessera_sim::share::SimSharing::from_file(&w.jobs, c.accounts, priority, &source, &names)?
        }
        None => tessera_sim::share::SimSharing::from_trace(&w.jobs, tessera_core::share::PriorityConfig { kind: PriorityKind::Multifactor, ..Default::default() }),
    };
    if let Some(p) = &a.usage_from {
        let (run, left_out);
        (s.history, s.history_at, run, left_out) = history_of(p, a.usage_run, &s.accounts, w)?;
        s.source = format!("{}; usage from {}: {} jobs of run {run}, {left_out} of users without an association left out", s.source, p.display(), s.history.len());
    }
    Ok(s)
}

/// The jobs of an accounting store's run as a past before the trace's first
/// instant (its last end there), each charging its user's association under
/// its account (else the user's default account); the jobs of users the
/// accounts do not know are left out (Slurm charged them to no association
/// here either), and so are partitions the cluster does not have.
fn history_of(path: &std::path::Path, run: Option<i64>, accounts: &tessera_core::share::Accounts, w: &tessera_sim::Workload) -> Result<(Vec<tessera_core::share::PastJob>, tessera_core::Time, i64, usize)> {
    let store = tessera_accounting::store::Store::open(path).with_context(|| format!("--usage-from {}", path.display()))?;
    let run = store.resolve_run(run).with_context(|| format!("--usage-from {}", path.display()))?;
    let past = tessera_accounting::usage::past_use(&store, run)?;
    let at = w.jobs.first().map_or(0, |j| j.submit);
    let shift = at - past.iter().map(|p| p.end).max().unwrap_or(0);
    let partitions: Vec<String> = match &w.machine {
        tessera_sim::Machine::Cluster { cluster, .. } => cluster.partitions.iter().map(|p| p.name.clone()).collect(),
        _ => Vec::new(),
    };
    let n = past.len();
    let jobs: Vec<_> = past
        .into_iter()
        .filter_map(|p| {
            let ticket = accounts.ticket(&p.user, Some(&p.account), None, 0).or_else(|_| accounts.ticket(&p.user, None, None, 0)).ok()?;
            let partition = partitions.iter().position(|n| *n == p.partition).unwrap_or(0);
            Some(tessera_core::share::PastJob { ticket, start: p.start + shift, end: p.end + shift, partition, parts: p.parts })
        })
        .collect();
    let left_out = n - jobs.len();
    Ok((jobs, at, run, left_out))
}

/// One simulation, before its outputs are written.
pub struct Executed {
    pub label: String,
    pub policy: PolicyKind,
    pub header: SwfHeader,
    /// The trace's records, or none if it was read as it streamed (from the
    /// file `streamed`).
    pub records: Vec<SwfRecord>,
    pub streamed: Option<PathBuf>,
    pub w: tessera_sim::Workload,
    pub outcome: tessera_sim::SimOutcome,
    pub summary: Summary,
}

/// Read (or generate) the jobs, build the machine and simulate.
pub fn execute(a: &RunSpec) -> Result<Executed> {
    execute_as(a, true)
}

/// [`execute`], the trace read as it streams where it may be (`stream`).
fn execute_as(a: &RunSpec, stream: bool) -> Result<Executed> {
    let t0 = Instant::now();
    a.check()?;
    let policy = a.policy;
    let mut cluster = match &a.cluster {
        Some(p) => Some(load_cluster(p)?),
        None if a.trace.is_none() => Some(default_cluster()),
        None => None,
    };
    if let Some(b) = a.power.budget_w {
        let c = cluster.as_mut().context("--budget-w needs --cluster with a power model")?;
        anyhow::ensure!(b.is_finite() && b > 0.0 && b <= 1e12, "--budget-w {b}: expected watts in (0, 1e12]");
        anyhow::ensure!(c.power_budget_w.is_some(), "--budget-w: cluster `{}` has no power_budget_w and power model to budget", c.name);
        c.power_budget_w = Some(b);
    }
    let cluster_cores = match &cluster {
        Some(c) => Some(u32::try_from(c.total_cores()).context("the cluster has more than 2^32 cores")?),
        None => None,
    };
    // a pool sized by the trace's header, by its comments before the first
    // job (the header is whole only once the file has been read: see below)
    let early_size = match (&a.trace, &cluster, a.capacity) {
        (Some(path), None, None) if stream && a.arrival_scale.is_none() => early_capacity(path, a.lenient),
        _ => None,
    };
    // a trace replayed as it is read (on a cluster, or a pool of a given
    // or header size, its arrivals as they are) is not kept whole: the
    // outputs that write its records read it again
    let streamed = match &a.trace {
        Some(path) if stream && a.arrival_scale.is_none() && (cluster.is_some() || a.capacity.is_some() || early_size.is_some()) => Some(tessera_workload::traces::resolve(path)?),
        _ => None,
    };
    // such a trace is also simulated as it is read, where the jobs need
    // nothing of the whole trace first (accounts, reservations)
    let asked = sharing_asked(a)?;
    let overlap = streamed.is_some() && asked.is_none() && a.reservations.is_none();
    let (label, mut header, mut records) = match (&a.trace, &streamed) {
        (_, Some(path)) => (path.display().to_string(), SwfHeader::default(), Vec::new()),
        (Some(path), None) => {
            let path = &tessera_workload::traces::resolve(path)?;
            let (h, r) = read_trace(path, a.lenient)?;
            (path.display().to_string(), h, r)
        }
        (None, None) => {
            let procs = cluster_cores.expect("default cluster");
            let (h, r) = generate(&LublinParams::new(procs, DEFAULT_JOBS, DEFAULT_SEED)).context("generating the default workload")?;
            (format!("default (Lublin-Feitelson 2003 model, {DEFAULT_JOBS} jobs, seed {DEFAULT_SEED}, {procs} processors)"), h, r)
        }
    };
    if let Some(n) = a.max_jobs {
        tessera_workload::transform::first_jobs(&mut records, n);
    }
    if let Some(g) = a.arrival_scale {
        tessera_workload::transform::scale_arrivals(&mut records, g).with_context(|| format!("--arrival-scale {g:?} on {label}"))?;
    }
    let w = match cluster {
        Some(cluster) => {
            let partition = match &a.partition {
                None => None,
                Some(name) => Some(cluster.partition_index(name).with_context(|| {
                    let known: Vec<&str> = cluster.partitions.iter().map(|p| p.name.as_str()).collect();
                    format!("--partition {name}: no such partition; known: {}", known.join(", "))
                })? as u16),
            };
            let nodeset = nodeset_of(a, &cluster)?;
            match crate::power::setup(&cluster, policy, &a.power)? {
                Some(setup) => {
                    if partition.is_some() || nodeset.is_some() {
                        bail!("--partition and --nodeset do not apply to a power-budgeted cluster (its default partition is one machine)");
                    }
                    load(Machine::Power(Arc::new(setup)), streamed.as_deref(), a, &mut header, &records, false)?
                }
                None => load(Machine::Cluster { cluster: Arc::new(cluster), partition, nodeset }, streamed.as_deref(), a, &mut header, &records, overlap)?,
            }
        }
        None if policy == PolicyKind::Parm => bail!("policy parm needs --cluster with a power budget (e.g. examples/clusters/theta-overprovisioned.toml)"),
        None if crate::power::any_power_flag(&a.power) => {
            bail!("power flags (--cap, --power-out, --parm-*, …) apply to a cluster with a power budget: give --cluster (e.g. examples/clusters/theta-overprovisioned.toml)")
        }
        None => {
            let capacity = match a.capacity {
                Some(c) => u32::try_from(c).ok().filter(|&c| c > 0).with_context(|| format!("--capacity {c}: expected 1..=4294967295"))?,
                None => match early_size {
                    Some(c) => c,
                    None => default_capacity(&header, &label)?,
                },
            };
            load(Machine::Pool(capacity), streamed.as_deref(), a, &mut header, &records, overlap)?
        }
    };
    let (mut w, fed) = w;
    // a comment after the first job that sizes the machine otherwise: the
    // trace is read whole, as a header-sized pool always was
    if early_size.is_some_and(|c| default_capacity(&header, &label).ok() != Some(c)) {
        return execute_as(a, false);
    }
    // reading (and, for a trace read as it streams, preparing its jobs; where
    // it was simulated as it was read, the reader's own time)
    let parse_time = fed.as_ref().map_or_else(|| t0.elapsed().as_secs_f64(), |f| f.read_s);
    if let Some(asked) = asked {
        let mut s = sharing_of(a, asked, &w, &header)?;
        s.drop_never_met(&mut w);
        w.sharing = Some(Arc::new(s));
    }
    if let Some(p) = &a.reservations {
        w.reservations = reservations_of(p, &w, policy)?;
    }
    w.check_time_range(&label)?;
    let overlapped = fed.is_some();
    let (outcome, sim_time) = match fed {
        Some(f) => (f.outcome, f.sim_s),
        None => {
            let t1 = Instant::now();
            let _span = tracing::info_span!("simulate", policy = policy.name(), jobs = w.jobs.len()).entered();
            let outcome = simulate(&w, policy);
            (outcome, t1.elapsed().as_secs_f64())
        }
    };
    anyhow::ensure!(outcome.rejected == 0, "{label}: the engine rejected {} of the simulator's inputs (a simulator defect; please report it with this trace)", outcome.rejected);
    let mut summary = Summary::compute(&label, &w, &outcome);
    summary.policy = policy.name().to_string();
    summary.parse_wall_time_s = parse_time;
    summary.sim_wall_time_s = sim_time;
    summary.overlapped = overlapped;
    summary.wall_time_s = t0.elapsed().as_secs_f64();
    Ok(Executed { label, policy, header, records, streamed, w, outcome, summary })
}

/// The workload of `machine`: from the records read, or from the trace
/// `streamed` as it is read.
fn load(machine: Machine, streamed: Option<&Path>, a: &RunSpec, header: &mut SwfHeader, records: &[SwfRecord], overlap: bool) -> Result<(tessera_sim::Workload, Option<Fedrun>)> {
    match streamed {
        Some(path) if overlap && !matches!(machine, Machine::Power(_)) => {
            let (h, w, fed) = stream_simulated(path, a, machine)?;
            *header = h;
            Ok((w, fed))
        }
        Some(path) => {
            let (h, w) = stream_trace(path, a, machine)?;
            *header = h;
            Ok((w, None))
        }
        None => Ok((prepare_on(records, machine), None)),
    }
}

/// The first `--max-jobs` records of a trace, the rest read and checked all
/// the same: each record kept, or the error that ends the reading.
fn kept_records<R: std::io::BufRead>(reader: &mut SwfReader<R>, most: Option<usize>) -> impl Iterator<Item = Result<SwfRecord, tessera_workload::swf::SwfError>> + '_ {
    let (mut kept, most, mut failed) = (0usize, most.unwrap_or(usize::MAX), false);
    std::iter::from_fn(move || loop {
        if failed {
            return None;
        }
        match reader.next()? {
            Ok(r) if kept < most => {
                kept += 1;
                return Some(Ok(r));
            }
            Ok(_) => {}
            Err(e) => {
                failed = true;
                return Some(Err(e));
            }
        }
    })
}

/// The workload of `machine` from the trace at `path`, its jobs prepared as
/// its records are read (none kept; the first `--max-jobs`, the rest read
/// and checked all the same), and its header.
fn stream_trace(path: &Path, a: &RunSpec, machine: Machine) -> Result<(SwfHeader, tessera_sim::Workload)> {
    let mut reader = SwfReader::open(path)?.lenient(a.lenient);
    reader.header()?;
    let mut failed = None;
    let records = kept_records(&mut reader, a.max_jobs).map_while(|r| r.map_err(|e| failed = Some(e)).ok());
    let w = tessera_sim::workload::prepare_stream(records, machine);
    if let Some(e) = failed {
        return Err(e.into());
    }
    report_lenient(path, &reader);
    Ok((reader.into_header(), w))
}

fn report_lenient<R: std::io::BufRead>(path: &Path, reader: &SwfReader<R>) {
    let report = reader.lenient_report();
    if report.skipped > 0 {
        eprintln!("{}: {report}", path.display());
    }
}

/// Jobs a reader prepares before handing them to the simulation, and how many
/// such handfuls may wait for it: the reader keeps at most this far ahead.
const FED_CHUNK: usize = 4096;
const FED_AHEAD: usize = 4;

/// A simulation made as its trace was read ([`stream_simulated`]).
struct Fedrun {
    outcome: tessera_sim::SimOutcome,
    /// Seconds the reader read and prepared (not counting its waits for the
    /// simulation to take what it had), and the simulation simulated (not
    /// counting its waits for the reader).
    read_s: f64,
    sim_s: f64,
}

/// [`stream_trace`] with the jobs simulated as they are read: a reader thread
/// prepares them and hands them over in queue order, and the simulation
/// replays them meanwhile ([`tessera_sim::simulate_fed`]). The schedule is the
/// one the workload whole gives: a trace out of queue order (a job submitted
/// before the one before it) is sorted once read and simulated whole (None),
/// as is one that could take the clock past 2^42 s (the caller's check then
/// says so).
fn stream_simulated(path: &Path, a: &RunSpec, machine: Machine) -> Result<(SwfHeader, tessera_sim::Workload, Option<Fedrun>)> {
    let mut reader = SwfReader::open(path)?.lenient(a.lenient);
    reader.header()?;
    let mut prep = tessera_sim::Preparer::new(&machine).ok().context("a trace simulated as it is read is replayed on a pool or a cluster")?;
    let (tx, rx) = std::sync::mpsc::sync_channel(FED_AHEAD);
    let most = a.max_jobs;
    let read = std::thread::Builder::new().name("trace reader".into()).spawn(move || {
        let t0 = Instant::now();
        let mut blocked = std::time::Duration::ZERO;
        let mut chunk = Vec::with_capacity(FED_CHUNK);
        let mut failed = None;
        let mut send = |fed| {
            let t = Instant::now();
            // a simulation that ended takes nothing more: read on and check
            let _ = tx.send(fed);
            blocked += t.elapsed();
        };
        for (i, r) in kept_records(&mut reader, most).enumerate() {
            match r {
                Ok(r) => {
                    if let Some(j) = prep.take(&r) {
                        chunk.push((j, i as u32));
                        if chunk.len() == FED_CHUNK {
                            send(tessera_sim::Fed::Jobs(std::mem::replace(&mut chunk, Vec::with_capacity(FED_CHUNK))));
                        }
                    }
                }
                Err(e) => failed = Some(e),
            }
        }
        send(match failed {
            Some(_) => tessera_sim::Fed::Failed,
            None => tessera_sim::Fed::Jobs(chunk),
        });
        drop(send);
        ((t0.elapsed() - blocked).as_secs_f64(), reader, prep, failed)
    })?;
    let t1 = Instant::now();
    let fed = {
        let _span = tracing::info_span!("simulate", policy = a.policy.name(), fed = true).entered();
        tessera_sim::simulate_fed(&machine, a.policy, &rx)
    };
    let sim_s = (t1.elapsed().as_secs_f64() - fed.waited_s).max(0.0);
    drop(rx);
    let (read_s, reader, prep, failed) = read.join().unwrap_or_else(|p| std::panic::resume_unwind(p));
    if let Some(e) = failed {
        return Err(e.into());
    }
    report_lenient(path, &reader);
    let ((mut jobs, record_index), outcome) = match fed.outcome {
        Ok(outcome) => ((fed.jobs, fed.record_index), Some(Fedrun { outcome, read_s, sim_s })),
        // out of order, or past the clock's end: the jobs as a whole workload
        Err(_) => (tessera_sim::in_queue_order(fed.jobs.into_iter().zip(fed.record_index).collect()), None),
    };
    jobs.shrink_to_fit();
    Ok((reader.into_header(), prep.workload(jobs, record_index, machine), outcome))
}

/// The machine size the header of the trace at `path` gives before its first
/// job, if it gives one (None too if the file cannot be read: reading it
/// whole says why).
fn early_capacity(path: &Path, lenient: bool) -> Option<u32> {
    let path = tessera_workload::traces::resolve(path).ok()?;
    let mut reader = SwfReader::open(&path).ok()?.lenient(lenient);
    default_capacity(reader.header().ok()?, &path.display().to_string()).ok()
}

/// The trace's records as [`execute`] read them: kept, or read again.
fn records_of(records: Vec<SwfRecord>, streamed: Option<&Path>, spec: &RunSpec) -> Result<Vec<SwfRecord>> {
    let Some(path) = streamed else { return Ok(records) };
    let (_, mut records) = read_trace(path, spec.lenient)?;
    if let Some(n) = spec.max_jobs {
        tessera_workload::transform::first_jobs(&mut records, n);
    }
    Ok(records)
}

/// The files `sim run` writes beside its summary on standard output (the power
/// drawn over time is `spec.power.power_out`).
#[derive(Clone, Debug, Default)]
pub struct Outputs {
    /// One CSV row per job.
    pub jobs_out: Option<PathBuf>,
    /// The simulated schedule as SWF.
    pub swf_out: Option<PathBuf>,
    /// The summary as JSON.
    pub summary: Option<PathBuf>,
    /// A self-contained HTML report.
    pub report: Option<PathBuf>,
    /// The accounting store the run is recorded in.
    pub db: Option<PathBuf>,
    /// Site name of the accounting records (default: the cluster's name).
    pub site: Option<String>,
}

impl Outputs {
    /// Every output file, with the flag that names it, for [`crate::files::check`].
    pub fn named<'a>(&'a self, spec: &'a RunSpec) -> Vec<(&'static str, &'a Path)> {
        [("--jobs-out", &self.jobs_out), ("--swf-out", &self.swf_out), ("--summary", &self.summary), ("--report", &self.report), ("--db", &self.db), ("--power-out", &spec.power.power_out)]
            .into_iter()
            .filter_map(|(f, p)| p.as_deref().map(|p| (f, p)))
            .collect()
    }
}

/// Write the outputs of a simulation of `spec` (`t0`: when the command began,
/// for the summary's wall time); the summary and its JSON.
pub fn write_outputs(e: Executed, spec: &RunSpec, o: &Outputs, t0: Instant) -> Result<(Summary, String)> {
    let Executed { label, policy, header, records, streamed, w, outcome, mut summary } = e;
    let capacity = w.capacity;
    let records = if o.swf_out.is_some() || o.db.is_some() || o.report.is_some() { records_of(records, streamed.as_deref(), spec)? } else { records };
    if let (Some(p), Some(po)) = (&spec.power.power_out, &outcome.power) {
        crate::power::write_power_csv(p, po)?;
    }
    if let Some(p) = &o.jobs_out {
        let f = File::create(p).with_context(|| format!("creating {}", p.display()))?;
        write_jobs_csv(f, &w, &outcome).with_context(|| format!("writing {}", p.display()))?;
    }
    if let Some(p) = &o.swf_out {
        let f = File::create(p).with_context(|| format!("creating {}", p.display()))?;
        let note = format!("simulated by tessera {} with policy {} on {capacity} processors", env!("CARGO_PKG_VERSION"), policy.name());
        write_swf(f, &header, &note, &records, &w, &outcome).with_context(|| format!("writing {}", p.display()))?;
    }
    let site = o.site.clone().unwrap_or_else(|| match &w.machine {
        Machine::Cluster { cluster, .. } => cluster.name.clone(),
        Machine::Pool(c) => format!("pool-{c}"),
        Machine::Power(s) => s.name.clone(),
    });
    if let Some(db) = &o.db {
        let offset = header.unix_start_time.unwrap_or(0);
        let run = crate::record::record(db, &site, &label, policy.name(), offset, &w, &outcome, &records)?;
        eprintln!("recorded as run {run} in {}", db.display());
        if let Some(r) = &o.report {
            let store = tessera_accounting::store::Store::open(db)?;
            crate::files::write_report(r, &RunData::load(&store, run, Default::default())?.page())?;
        }
    } else if let Some(r) = &o.report {
        // the report reads the run from a store: an in-memory one
        let mut store = tessera_accounting::store::Store::in_memory()?;
        let run = crate::record::record_into(&mut store, &site, &label, policy.name(), header.unix_start_time.unwrap_or(0), &w, &outcome, &records)?;
        crate::files::write_report(r, &RunData::load(&store, run, Default::default())?.page())?;
    }
    summary.wall_time_s = t0.elapsed().as_secs_f64();
    let json = serde_json::to_string_pretty(&summary)?;
    if let Some(p) = &o.summary {
        std::fs::write(p, format!("{json}\n")).with_context(|| format!("writing {}", p.display()))?;
    }
    Ok((summary, json))
}

/// A reservations file's reservations on the workload's machine, each made at
/// the trace's start (instant 0), checked as the engine makes them: errors
/// name file, line and field.
pub fn reservations_of(p: &Path, w: &tessera_sim::Workload, policy: PolicyKind) -> Result<Vec<tessera_core::ReservationSpec>> {
    let name = p.display().to_string();
    let text = std::fs::read_to_string(p).with_context(|| format!("reading reservations file {name}"))?;
    let cluster = match &w.machine {
        Machine::Cluster { cluster, .. } => cluster.as_ref().clone(),
        Machine::Pool(c) => Cluster::pool(*c),
        Machine::Power(_) => bail!("{name}: reservations apply to a queue policy's nodes (fcfs, easy, conservative), not a power-budgeted cluster"),
    };
    if policy == PolicyKind::Parm {
        bail!("{name}: reservations apply to fcfs, easy and conservative, not parm");
    }
    let mut engine = tessera_core::Engine::with_cluster(policy, &cluster).expect("a queue policy");
    let mut out = Vec::new();
    for (i, (req, line)) in tessera_core::resv::request::from_toml(&text, &name)?.into_iter().enumerate() {
        let at = |m: String| anyhow::anyhow!("{name}:{}: reservation[{i}]: {m}", line.unwrap_or(0));
        let spec = req.resolve(&cluster, 0, &format!("r{i}")).map_err(|e| at(e.to_string()))?;
        let mut fx = Vec::new();
        engine.handle(0, tessera_core::Input::Reserve(Box::new(spec.clone())), &mut fx);
        if let Some(tessera_core::Effect::Rejected { reason, .. }) = fx.iter().find(|x| matches!(x, tessera_core::Effect::Rejected { .. })) {
            return Err(at(reason.to_string()));
        }
        out.push(spec);
    }
    Ok(out)
}
