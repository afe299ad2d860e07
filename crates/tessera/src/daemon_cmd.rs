//! The daemons: `tessera controller`, `tessera agent`, and `tessera up` /
//! `tessera down`, which start and stop a controller and agents emulating a
//! cluster on this machine (through `tessera_emulation::local`, which `up`
//! supervises here); `tessera token create`.

use crate::out::outln;
use tessera_proto::unix_now;
use crate::live_args::*;
use anyhow::{anyhow, bail, Context, Result};
use std::path::PathBuf;
use tessera_agent::agent::{Agent, AgentConfig};
use tessera_controller::auth::{Key, Role};
use tessera_controller::Config;
use tessera_core::{hostlist, Cluster};
use tessera_emulation::local::{cluster_text, start_local, stop, write_up_file, UpFile};
use tessera_proto::api::AgentNode;
use tessera_proto::client::Target;

/// This `tessera` binary, which the daemons of a local cluster and the sleep
/// jobs of a replay run.
pub fn bin() -> Result<PathBuf> {
    std::env::current_exe().context("finding the tessera binary")
}

pub fn controller(a: ControllerArgs) -> Result<()> {
    let (cluster_toml, cluster_path) = cluster_text(&a.cluster)?;
    // validate now, so a bad file is reported before anything starts
    Cluster::from_toml(&cluster_toml, &cluster_path).map_err(|e| anyhow!("{e}"))?;
    let policy = a.policy.parse().map_err(|e| anyhow!("--policy: {e}"))?;
    let default_limit_s = tessera_proto::submit::parse_time_limit("--default-time", &a.default_time)
        .map_err(|e| anyhow!(e))?
        .unwrap_or(tessera_proto::submit::MAX_LIMIT_S);
    let cfg = Config {
        state_dir: a.state_dir,
        cluster_toml,
        cluster_path,
        policy,
        listen: a.listen,
        heartbeat_timeout_s: a.heartbeat_timeout.max(1),
        kill_grace_s: a.kill_grace,
        default_limit_s,
        operators: a.operators,
        site: a.site,
        max_batch: a.max_batch,
        coalesce_ms: a.coalesce_ms,
        parm: a.parm.config(&a.policy).map_err(anyhow::Error::msg)?,
    };
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build()?;
    rt.block_on(tessera_controller::http::serve(cfg))
}

/// The nodes an agent presents, with their resources from a cluster file or
/// detected on this machine, and their power domains: an emulated node with a
/// power model draws by it, a real node has its RAPL packages if the powercap
/// tree has any (else no domain).
fn agent_nodes(a: &AgentArgs, name: &str) -> Result<(Vec<AgentNode>, Vec<(String, tessera_agent::power::Source)>)> {
    let names = match &a.nodes {
        Some(h) => hostlist::expand(h).map_err(|e| anyhow!("--nodes {h:?}: {e}"))?,
        None => vec![name.to_string()],
    };
    let cluster = if a.default_cluster || a.cluster.is_some() {
        let (text, path) = cluster_text(&a.cluster)?;
        Some(Cluster::from_toml(&text, &path).map_err(|e| anyhow!("{e}"))?)
    } else {
        None
    };
    let (cores, mem, gpus) = tessera_agent::agent::detect();
    let (mut nodes, mut models) = (Vec::new(), Vec::new());
    for n in names {
        let Some(c) = &cluster else {
            models.push((n.clone(), None));
            nodes.push(AgentNode { name: n, cores, memory_mb: mem, gpus, confinement: None });
            continue;
        };
        let node = c.nodes.iter().find(|x| x.name == n).ok_or_else(|| anyhow!("--nodes: no node {n} in cluster {}", c.name))?;
        let model = c.node_types[node.node_type].power.as_ref().map(|p| tessera_agent::power::NodeModel {
            busy_extra_w: p.base_w + p.memory_w,
            idle_w: p.idle_w,
            cpu_min_w: p.cap_levels_w.iter().copied().fold(p.cpu_max_w, f64::min),
            cpu_max_w: p.cpu_max_w,
        });
        models.push((n.clone(), Some(model)));
        nodes.push(AgentNode { name: n, cores: node.cores, memory_mb: node.memory_mb, gpus: node.gpus, confinement: None });
    }
    Ok((nodes, tessera_agent::power::sources(models, a.power_domain, &a.powercap_root).map_err(anyhow::Error::msg)?))
}

pub fn agent(a: AgentArgs) -> Result<()> {
    let name = match &a.name {
        Some(n) => n.clone(),
        None => nix::unistd::gethostname()?.to_string_lossy().to_string(),
    };
    let target = Target::parse(&a.controller).map_err(|e| anyhow!(e))?;
    let token = match (&a.token, &a.key_file) {
        (Some(t), _) => t.clone(),
        (None, Some(k)) => Key::load(k, false)?.sign(Role::Agent, &name, nix::unistd::geteuid().as_raw(), unix_now() + 10 * 365 * 86400),
        (None, None) => bail!("the agent needs --key-file (the cluster key) or --token (an agent token)"),
    };
    let (mut nodes, power) = agent_nodes(&a, &name)?;
    let emulated = a.default_cluster || a.cluster.is_some();
    let (cgroups, gpu_devices) = a.cgroup.setup(&name, &a.state_dir, &mut nodes, emulated).map_err(anyhow::Error::msg)?;
    // one agent per spool, and only the operator reads it
    let _lock = tessera_proto::statedir::lock(&a.state_dir, "agent")?;
    tessera_proto::statedir::secure(&a.state_dir, &[]).with_context(|| format!("securing state directory {}", a.state_dir.display()))?;
    let cfg = AgentConfig { name, target, token, nodes, state_dir: a.state_dir.clone(), limit_slack_s: a.limit_slack, power, cgroups, emulated, gpu_devices };
    // before the runtime's threads: the launcher is forked from a one-thread process
    let launcher = tessera_agent::launcher::Launcher::start().context("starting the launcher")?;
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(1).enable_all().build()?;
    rt.block_on(async move {
        let agent = Agent::open(cfg, launcher)?;
        let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())?;
        tokio::select! {
            r = agent.run() => r,
            _ = tokio::signal::ctrl_c() => Ok(()),
            _ = term.recv() => Ok(()),
        }
    })
}

pub fn token(a: tessera_controller::auth::TokenArgs) -> Result<()> {
    outln!("{}", a.create().map_err(anyhow::Error::msg)?)?;
    Ok(())
}

pub fn up(a: UpArgs) -> Result<()> {
    let dir = &a.state_dir;
    tessera_proto::statedir::create_dir(dir).with_context(|| format!("creating {}", dir.display()))?;
    let dir = dir.canonicalize()?;
    // the controller's lock says whether one runs here (a pid in up.json may
    // be another process's by now)
    if let Some(pid) = tessera_proto::statedir::holder(&dir, "controller")? {
        bail!("a controller (pid {pid}) already runs on {}: stop it with `tessera down --state-dir {}`", dir.display(), dir.display());
    }
    a.parm.config(&a.policy).map_err(anyhow::Error::msg)?;
    let mut local = start_local(&bin()?, &dir, &a.cluster, a.agents, a.listen, &a.policy, &a.parm.args(), a.reconfigure)?;
    let f = local.file();
    write_up_file(&dir, &f)?;
    let (ep, cluster, n) = (&local.ep, &local.cluster, local.agents.len());
    let cores: u32 = cluster.nodes.iter().map(|x| x.cores).sum();
    outln!("Tessera is up: controller {} (pid {}), {n} agents presenting the {} nodes ({cores} cores) of cluster {}.", ep.url, f.controller, cluster.nodes.len(), cluster.name)?;
    outln!("State, logs and accounting in {}.", dir.display())?;
    outln!("Try:  tessera job submit --state-dir {} --wrap 'hostname; sleep 5'", dir.display())?;
    outln!("      tessera queue --state-dir {}", dir.display())?;
    if a.detach {
        outln!("Stop: tessera down --state-dir {}", dir.display())?;
        return Ok(());
    }
    outln!("Ctrl-C stops the controller and the agents (running jobs continue and are re-adopted by the next `tessera up`).")?;
    tessera_emulation::supervise::supervise(&mut local, &dir)
}

pub fn down(a: DownArgs) -> Result<()> {
    let p = a.state_dir.join("up.json");
    let text = std::fs::read_to_string(&p).with_context(|| format!("{}: nothing was started here by `tessera up --detach`", p.display()))?;
    let f: UpFile = serde_json::from_str(&text).with_context(|| format!("{}", p.display()))?;
    stop(&f);
    let _ = std::fs::remove_file(&p);
    outln!("Stopped the controller and {} agents of {}.", f.agents.len(), a.state_dir.display())?;
    Ok(())
}
