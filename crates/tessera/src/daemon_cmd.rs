//! The daemons: `tessera controller`, `tessera agent`, and `tessera up` /
//! `tessera down`, which start and stop a controller and agents emulating a
//! cluster on this machine (through `tessera_emulation::local`, which `up`
//! supervises here); `tessera token create`.

use crate::out::outln;
use tessera_proto::unix_now;
use crate::live_args::*;
use anyhow::{anyhow, bail, Context, Result};
use std::path::PathBuf;
use std::time::{Duration, Instant};
use tessera_agent::agent::{Agent, AgentConfig};
use tessera_controller::auth::{Key, Role};
use tessera_controller::Config;
use tessera_core::{hostlist, Cluster};
use tessera_emulation::supervise::{note, Restarts};
use tessera_emulation::local::{cluster_text, start_local, stop, tail, write_up_file, UpFile};
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
        parm: a.parm.config(&a.policy)?,
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
    use tessera_agent::power::{NodeModel, Source};
    let (cores, mem, gpus) = tessera_agent::agent::detect();
    let rapl = tessera_agent::powercap::Powercap::new(&a.powercap_root);
    let has_rapl = || rapl.zones().is_ok_and(|z| z.iter().any(|z| z.is_package()));
    if a.power_domain == PowerDomain::Model && cluster.is_none() {
        bail!("--power-domain model: the power model is the cluster file's (give --cluster or --default-cluster)");
    }
    let (mut nodes, mut power) = (Vec::new(), Vec::new());
    for n in names {
        let node = match &cluster {
            Some(c) => Some((c, c.nodes.iter().find(|x| x.name == n).ok_or_else(|| anyhow!("--nodes: no node {n} in cluster {}", c.name))?)),
            None => None,
        };
        let model = node.and_then(|(c, node)| c.node_types[node.node_type].power.as_ref()).map(|p| {
            let cpu_min_w = p.cap_levels_w.iter().copied().fold(p.cpu_max_w, f64::min);
            Source::Model(NodeModel { busy_extra_w: p.base_w + p.memory_w, idle_w: p.idle_w, cpu_min_w, cpu_max_w: p.cpu_max_w })
        });
        let source = match a.power_domain {
            PowerDomain::None => None,
            PowerDomain::Model => model,
            PowerDomain::Rapl => Some(Source::Rapl(rapl.clone())),
            PowerDomain::Auto if node.is_some() => model,
            PowerDomain::Auto => has_rapl().then(|| Source::Rapl(rapl.clone())),
        };
        power.extend(source.map(|s| (n.clone(), s)));
        nodes.push(match node {
            Some((_, node)) => AgentNode { name: n, cores: node.cores, memory_mb: node.memory_mb, gpus: node.gpus },
            None => AgentNode { name: n, cores, memory_mb: mem, gpus },
        });
    }
    Ok((nodes, power))
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
    let (nodes, power) = agent_nodes(&a, &name)?;
    // one agent per spool, and only the operator reads it
    let _lock = tessera_proto::statedir::lock(&a.state_dir, "agent")?;
    tessera_proto::statedir::secure(&a.state_dir, &[]).with_context(|| format!("securing state directory {}", a.state_dir.display()))?;
    let cfg = AgentConfig { name, target, token, nodes, state_dir: a.state_dir.clone(), limit_slack_s: a.limit_slack, power };
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

pub fn token(a: TokenArgs) -> Result<()> {
    let role = Role::parse(&a.role).ok_or_else(|| anyhow!("--role {:?}: expected user, operator or agent", a.role))?;
    let ttl = tessera_proto::submit::parse_time_limit("--ttl", &a.ttl).map_err(|e| anyhow!(e))?.unwrap_or(10 * 365 * 86400);
    let key_path = a.key_file.unwrap_or_else(|| a.state_dir.join("cluster.key"));
    let key = Key::load(&key_path, false)?;
    let uid = match a.uid {
        Some(u) => u,
        None => nix::unistd::User::from_name(&a.user).ok().flatten().map(|u| u.uid.as_raw()).ok_or_else(|| anyhow!("--user {}: no such local user; give --uid", a.user))?,
    };
    outln!("{}", key.sign(role, &a.user, uid, unix_now() + ttl))?;
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
    a.parm.config(&a.policy)?;
    let mut local = start_local(&bin()?, &dir, &a.cluster, a.agents, a.listen, &a.policy, &a.parm.args(), a.reconfigure)?;
    let f = local.file();
    write_up_file(&dir, &f)?;
    let (ep, cluster, n) = (&local.ep, &local.cluster, local.agents.len());
    let clog = dir.join("controller.log");
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
    let mut signals = signal_hook_lite()?;
    let mut restarts = Restarts::new(Instant::now());
    'supervise: loop {
        if signals() {
            break;
        }
        if let Some(st) = local.controller.try_wait()? {
            // fail-stop: a controller that ends abnormally (a panic, a failed
            // write: status 70; a signal) is started again, and recovers
            let pid = local.controller.id();
            tessera_emulation::interrupt::forget(&[pid]);
            let why = if st.success() {
                Some("it exited without being asked to".to_string())
            } else {
                restarts.exited(Instant::now()).err()
            };
            let pause = match why {
                Some(why) => {
                    stop(&local.file());
                    let _ = std::fs::remove_file(dir.join("up.json"));
                    bail!("the controller exited ({st}); {why}: stopped the agents.\n{}", tail(&clog));
                }
                None => restarts.pause(),
            };
            let msg = format!("tessera up: the controller (pid {pid}) exited abnormally ({st}); restarting it in {} ms (restart {})", pause.as_millis(), restarts.total);
            eprintln!("{msg}");
            note(&clog, &msg);
            let until = Instant::now() + pause;
            while Instant::now() < until {
                if signals() {
                    break 'supervise;
                }
                std::thread::sleep(Duration::from_millis(50));
            }
            match local.restart_controller() {
                Ok(()) => {
                    let msg = format!("tessera up: the controller is back (pid {}, restart {})", local.controller.id(), restarts.total);
                    eprintln!("{msg}");
                    note(&clog, &msg);
                }
                // it exited starting (seen next round), or was killed after 30 s
                Err(e) => eprintln!("tessera up: the restarted controller did not come up: {e:#}"),
            }
            restarts.started(Instant::now());
        }
        std::thread::sleep(Duration::from_millis(200));
    }
    stop(&local.file());
    let _ = std::fs::remove_file(dir.join("up.json"));
    Ok(())
}

static STOP: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

extern "C" fn on_stop(_: libc::c_int) {
    STOP.store(true, std::sync::atomic::Ordering::SeqCst);
}

/// A poll for SIGINT or SIGTERM, without an async runtime.
fn signal_hook_lite() -> Result<impl FnMut() -> bool> {
    // SAFETY: the handler only stores to an atomic.
    unsafe {
        libc::signal(libc::SIGINT, on_stop as *const () as libc::sighandler_t);
        libc::signal(libc::SIGTERM, on_stop as *const () as libc::sighandler_t);
    }
    Ok(|| STOP.load(std::sync::atomic::Ordering::SeqCst))
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
