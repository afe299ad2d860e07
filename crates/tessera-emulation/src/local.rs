//! A local cluster: a controller and agents emulating a cluster on this
//! machine, as real daemons (processes of the `tessera` binary), every node
//! registered. `tessera up` starts one ([`start_local`]) and supervises it; the
//! tools (`twin`, `chaos`, `soak`, `loadtest`) start one in a [`Guard`], which
//! stops it however the tool ends; the live tests start one through the same
//! code.
//!
//! The daemons run in process groups of their own ([`crate::interrupt`] stops
//! them on SIGINT or SIGTERM), and `up.json` in the state directory names them
//! from their start on, for `tessera down` after a kill -9. A state directory's
//! agents present the same nodes at every start (`agents.json`).

use crate::client::{changes, runtime};
use crate::stop::{kill_jobs, stop_pids};
use anyhow::{anyhow, bail, Context, Result};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};
use tessera_core::{hostlist, Cluster};
use tessera_proto::api::NodeInfo;
use tessera_proto::client::{Client, Target};

/// A cluster file's text and how to name it: the file given, else the embedded
/// default cluster.
pub fn cluster_text(path: &Option<PathBuf>) -> Result<(String, String)> {
    match path {
        Some(p) => Ok((std::fs::read_to_string(p).with_context(|| format!("reading cluster file {}", p.display()))?, p.display().to_string())),
        None => Ok((tessera_studies::run::DEFAULT_CLUSTER.to_string(), tessera_studies::run::DEFAULT_CLUSTER_PATH.to_string())),
    }
}

/// What `tessera up` started, for `tessera down`.
#[derive(serde::Serialize, serde::Deserialize)]
pub struct UpFile {
    pub controller: u32,
    pub agents: Vec<u32>,
}

/// Start the `tessera` binary `exe` with `args` as a daemon, its output
/// appended to `log`.
fn spawn_daemon(exe: &Path, args: &[String], log: &Path) -> Result<Child> {
    use std::os::unix::fs::OpenOptionsExt;
    use std::os::unix::process::CommandExt;
    // appended: a restarted daemon's log follows its previous run's
    // the operator's only, as the rest of the state directory
    let out = std::fs::OpenOptions::new().create(true).append(true).mode(0o600).open(log).with_context(|| format!("opening {}", log.display()))?;
    let err = out.try_clone()?;
    // in a process group of its own: a Ctrl-C at the terminal is the command's
    // (which stops it: see `crate::interrupt`), and `up --detach` leaves it running
    crate::interrupt::spawn(|| {
        Command::new(exe)
            .args(args)
            .stdin(Stdio::null())
            .stdout(out)
            .stderr(err)
            .env("TESSERA_LOG", std::env::var("TESSERA_LOG").unwrap_or_else(|_| "info".into()))
            .process_group(0)
            .spawn()
            .context("starting a daemon")
    })
}

/// The last lines of a daemon's log, for an error.
pub fn tail(log: &Path) -> String {
    let t = std::fs::read_to_string(log).unwrap_or_default();
    let lines: Vec<&str> = t.lines().collect();
    // a panic's message first: its backtrace fills the last lines
    let panic = lines.iter().position(|l| l.contains("panicked at")).map(|i| lines[i..(i + 3).min(lines.len())].join("\n") + "\n...\n").unwrap_or_default();
    panic + &lines[lines.len().saturating_sub(15)..].join("\n")
}

/// A controller and agents started on this machine, every node registered.
pub struct Local {
    pub controller: Child,
    pub agents: Vec<Child>,
    pub ep: tessera_controller::Endpoint,
    pub cluster: Cluster,
    /// The `tessera` binary the daemons run.
    bin: PathBuf,
    dir: PathBuf,
    /// The command lines each daemon was started with, to start it again.
    controller_args: Vec<String>,
    agent_args: Vec<Vec<String>>,
}

impl Local {
    /// The daemons' pids, as `up.json` holds them.
    pub fn file(&self) -> UpFile {
        UpFile { controller: self.controller.id(), agents: self.agents.iter().map(|c| c.id()).collect() }
    }

    /// Stop the agents and the controller (SIGTERM, then SIGKILL after 10 s),
    /// and remove `up.json`.
    pub fn stop(&self) {
        let f = self.file();
        stop(&f);
        crate::interrupt::forget(&f.pids());
        crate::interrupt::forget_dir(&self.dir);
        let _ = std::fs::remove_file(self.dir.join("up.json"));
    }

    /// SIGKILL the controller (it gets no chance to clean up), and reap it.
    pub fn kill9_controller(&mut self) -> Result<()> {
        self.controller.kill().context("killing the controller")?;
        self.controller.wait()?;
        crate::interrupt::forget(&[self.controller.id()]);
        Ok(())
    }

    /// Start the controller again with its first command line, listening
    /// where the previous one served (for the agents to find it again: a
    /// `--listen` of port 0 picked a port at the first start); return once it
    /// serves.
    pub fn restart_controller(&mut self) -> Result<()> {
        let _ = std::fs::remove_file(self.dir.join("controller.json"));
        if let (Some(addr), Some(i)) = (self.ep.url.strip_prefix("http://"), self.controller_args.iter().position(|a| a == "--listen")) {
            self.controller_args[i + 1] = addr.to_string();
        }
        self.controller = spawn_daemon(&self.bin, &self.controller_args, &self.dir.join("controller.log"))?;
        write_up_file(&self.dir, &self.file())?;
        self.ep = wait_for_endpoint(&self.dir, &mut self.controller)?;
        Ok(())
    }

    /// SIGKILL agent `k` (from 0), and reap it.
    pub fn kill9_agent(&mut self, k: usize) -> Result<()> {
        self.agents[k].kill().with_context(|| format!("killing agent{}", k + 1))?;
        self.agents[k].wait()?;
        crate::interrupt::forget(&[self.agents[k].id()]);
        Ok(())
    }

    /// Start agent `k` again with its first command line and `extra`
    /// arguments, which it keeps for its later starts.
    pub fn restart_agent_with(&mut self, k: usize, extra: &[String]) -> Result<()> {
        self.agent_args[k].extend(extra.iter().cloned());
        self.restart_agent(k)
    }

    /// Start agent `k` again with its first command line.
    pub fn restart_agent(&mut self, k: usize) -> Result<()> {
        self.agents[k] = spawn_daemon(&self.bin, &self.agent_args[k], &self.dir.join(format!("agent{}.log", k + 1)))?;
        write_up_file(&self.dir, &self.file())
    }
}

impl UpFile {
    pub fn pids(&self) -> Vec<u32> {
        self.agents.iter().copied().chain(std::iter::once(self.controller)).collect()
    }
}

/// `up.json` in `dir`: the daemons' pids, for `tessera down --state-dir DIR`
/// to stop them should the command that started them be killed (kill -9).
pub fn write_up_file(dir: &Path, f: &UpFile) -> Result<()> {
    write_private(&dir.join("up.json"), &serde_json::to_vec_pretty(f)?)
}

/// Write a file of the state directory, readable by the operator alone.
pub fn write_private(p: &Path, bytes: &[u8]) -> Result<()> {
    use std::os::unix::fs::OpenOptionsExt;
    let mut w = std::fs::OpenOptions::new().write(true).create(true).truncate(true).mode(0o600).open(p).with_context(|| format!("writing {}", p.display()))?;
    std::io::Write::write_all(&mut w, bytes).with_context(|| format!("writing {}", p.display()))
}

/// The endpoint a starting controller writes once it serves (30 s at most).
fn wait_for_endpoint(dir: &Path, controller: &mut Child) -> Result<tessera_controller::Endpoint> {
    let clog = dir.join("controller.log");
    let t0 = Instant::now();
    loop {
        if let Ok(t) = std::fs::read_to_string(dir.join("controller.json")) {
            if let Ok(ep) = serde_json::from_str(&t) {
                return Ok(ep);
            }
        }
        if let Some(st) = controller.try_wait()? {
            bail!("the controller exited ({st}):\n{}", tail(&clog));
        }
        if t0.elapsed() > Duration::from_secs(30) {
            let _ = controller.kill();
            bail!("the controller did not start within 30 s:\n{}", tail(&clog));
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Start a controller (the `tessera` binary `bin`) with state in `dir` (extra
/// arguments appended) and `agents` agents sharing the cluster's nodes; return once every node is
/// registered. From the first daemon on, their pids are in `dir/up.json`
/// (`tessera down --state-dir DIR` stops them), a SIGINT or SIGTERM stops them
/// (`crate::interrupt`), and so does an error here; the caller stops them with
/// [`Local::stop`] (the tools through [`Guard`], which does so however the
/// command ends).
///
/// On a state directory that runs another cluster, `reconfigure` applies the
/// file given (`POST /v1/cluster`); otherwise the state's cluster is kept.
#[allow(clippy::too_many_arguments)]
pub fn start_local(bin: &Path, dir: &Path, cluster_file: &Option<PathBuf>, agents: usize, listen: std::net::SocketAddr, policy: &str, extra: &[String], reconfigure: bool) -> Result<Local> {
    let (text, path) = cluster_text(cluster_file)?;
    let cluster = Cluster::from_toml(&text, &path).map_err(|e| anyhow!("{e}"))?;
    // everything that can fail before the first daemon starts
    let cluster_arg = match cluster_file {
        Some(c) => Some(c.canonicalize().with_context(|| format!("finding cluster file {}", c.display()))?.display().to_string()),
        None => None,
    };
    let rt = runtime()?;
    crate::interrupt::install();
    crate::interrupt::watch_dir(dir, false);
    let _ = std::fs::remove_file(dir.join("controller.json"));
    let mut args = vec!["controller".to_string(), "--state-dir".into(), dir.display().to_string(), "--listen".into(), listen.to_string(), "--policy".into(), policy.to_string()];
    if let Some(c) = &cluster_arg {
        args.extend(["--cluster".into(), c.clone()]);
    }
    args.extend(extra.iter().cloned());
    let mut controller = match spawn_daemon(bin, &args, &dir.join("controller.log")) {
        Ok(c) => c,
        Err(e) => {
            crate::interrupt::forget_dir(dir);
            return Err(e);
        }
    };
    let t0 = Instant::now();
    let first = UpFile { controller: controller.id(), agents: Vec::new() };
    // a state directory keeps the cluster it was created with: say so when the
    // file given now differs, and present the state's nodes
    let serving = write_up_file(dir, &first)
        .and_then(|()| wait_for_endpoint(dir, &mut controller))
        .and_then(|ep| Ok((kept_cluster(dir, &ep, &rt, &text, &path, reconfigure)?, ep)));
    let (kept, ep) = match serving {
        Ok(x) => x,
        Err(e) => {
            stop(&first);
            crate::interrupt::forget(&[first.controller]);
            crate::interrupt::forget_dir(dir);
            let _ = std::fs::remove_file(dir.join("up.json"));
            return Err(e);
        }
    };
    let (cluster, cluster_arg) = match kept {
        Some((c, file)) => (c, Some(file)),
        None => (cluster, cluster_arg),
    };
    let mut local = Local { controller, agents: Vec::new(), ep, cluster, bin: bin.to_path_buf(), dir: dir.to_path_buf(), controller_args: args, agent_args: Vec::new() };
    match start_agents(&mut local, agents, &cluster_arg, &rt, t0) {
        Ok(()) => Ok(local),
        Err(e) => {
            local.stop();
            Err(e)
        }
    }
}

/// The cluster a controller serves, when it is not the one given (`text`
/// read from `path`): its state directory runs another. With `reconfigure`,
/// applies the one given instead (and says what changed). Otherwise warns on
/// the terminal, naming the nodes added, removed and changed, and writes the
/// state's cluster to `DIR/cluster-in-use.toml` for the agents.
fn kept_cluster(dir: &Path, ep: &tessera_controller::Endpoint, rt: &tokio::runtime::Runtime, text: &str, path: &str, reconfigure: bool) -> Result<Option<(Cluster, String)>> {
    let mut client = Client::new(Target::Unix(ep.socket.clone()), None);
    let info: tessera_proto::api::ClusterInfo = rt.block_on(client.call::<(), _>(hyper::Method::GET, "/v1/cluster", None)).map_err(|e| anyhow!("asking the controller for its cluster: {e}"))?;
    if info.toml == text {
        return Ok(None);
    }
    let was = if info.path.is_empty() { "the embedded default".to_string() } else { info.path.clone() };
    if reconfigure {
        let r = crate::client::reconfigure(&mut client, rt, text, path)?;
        eprintln!("{} now runs cluster file {path} instead of {was}: {}", dir.display(), r);
        return Ok(None);
    }
    let kept = Cluster::from_toml(&info.toml, &info.path).map_err(|e| anyhow!("{e}"))?;
    let given = Cluster::from_toml(text, path).map_err(|e| anyhow!("{e}"))?;
    eprintln!(
        "warning: {} runs cluster {} ({was}, {} nodes) and keeps it; the cluster file given now ({path}) differs ({}) and is not used.\n\
         To apply it, with running jobs kept: tessera up --reconfigure (or, while Tessera runs, tessera cluster reconfigure FILE).",
        dir.display(),
        kept.name,
        kept.nodes.len(),
        changes(&tessera_core::Reconfiguration::differences(&kept, &given)),
    );
    let file = dir.join("cluster-in-use.toml");
    std::fs::write(&file, &info.toml).with_context(|| format!("writing {}", file.display()))?;
    Ok(Some((kept, file.display().to_string())))
}

/// Which agent presents which nodes: kept in `DIR/agents.json`, so that a
/// state directory's agents present the same nodes at every start (an agent's
/// running jobs are on its own nodes). The first start shares the nodes among
/// `n` agents; nodes a changed cluster adds go to one new agent, and nodes it
/// removes leave their agent.
pub fn agents_plan(dir: &Path, cluster: &Cluster, n: usize) -> Result<Vec<(String, Vec<String>)>> {
    let file = dir.join("agents.json");
    let names: Vec<&str> = cluster.nodes.iter().map(|x| x.name.as_str()).collect();
    let mut plan: Vec<(String, Vec<String>)> = match std::fs::read_to_string(&file) {
        Ok(t) => serde_json::from_str(&t).with_context(|| format!("reading {}: expected [[agent, [nodes]], ...]", file.display()))?,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Vec::new(),
        Err(e) => return Err(e).with_context(|| format!("reading {}", file.display())),
    };
    if plan.is_empty() {
        let n = n.clamp(1, names.len());
        plan = (0..n).map(|k| (format!("agent{}", k + 1), names[k * names.len() / n..(k + 1) * names.len() / n].iter().map(|s| s.to_string()).collect())).collect();
    } else {
        let present: std::collections::BTreeSet<&str> = names.iter().copied().collect();
        for (_, nodes) in plan.iter_mut() {
            nodes.retain(|x| present.contains(x.as_str()));
        }
        let placed: std::collections::BTreeSet<String> = plan.iter().flat_map(|(_, v)| v.iter().cloned()).collect();
        let added: Vec<String> = names.iter().filter(|x| !placed.contains(**x)).map(|x| x.to_string()).collect();
        if !added.is_empty() {
            let next = plan.iter().filter_map(|(a, _)| a.strip_prefix("agent")?.parse::<usize>().ok()).max().unwrap_or(0) + 1;
            plan.push((format!("agent{next}"), added));
        }
        plan.retain(|(_, v)| !v.is_empty());
    }
    write_private(&file, &serde_json::to_vec_pretty(&plan)?)?;
    Ok(plan)
}

/// `start_local`'s agents (`n` of them sharing the nodes of a new state
/// directory: [`agents_plan`]); returns once every node is registered. On an
/// error the caller stops what was started.
fn start_agents(local: &mut Local, n: usize, cluster_arg: &Option<String>, rt: &tokio::runtime::Runtime, t0: Instant) -> Result<()> {
    let dir = local.dir.clone();
    for (name, names) in agents_plan(&dir, &local.cluster, n)? {
        let names: Vec<&str> = names.iter().map(|s| s.as_str()).collect();
        let mut args = vec![
            "agent".to_string(),
            "--name".into(),
            name.clone(),
            "--controller".into(),
            local.ep.url.clone(),
            "--key-file".into(),
            dir.join("cluster.key").display().to_string(),
            "--nodes".into(),
            hostlist::compress(&names),
            "--state-dir".into(),
            dir.join("agents").join(&name).display().to_string(),
        ];
        match cluster_arg {
            Some(c) => args.extend(["--cluster".into(), c.clone()]),
            None => args.push("--default-cluster".into()),
        }
        let c = spawn_daemon(&local.bin, &args, &dir.join(format!("{name}.log")))?;
        local.agents.push(c);
        local.agent_args.push(args);
        write_up_file(&dir, &local.file())?;
    }
    // ready once every node is registered
    let mut client = Client::new(Target::Unix(local.ep.socket.clone()), None);
    loop {
        let nodes: Vec<NodeInfo> = rt.block_on(client.call::<(), _>(hyper::Method::GET, "/v1/nodes", None)).unwrap_or_default();
        if !nodes.is_empty() && nodes.iter().all(|x| x.state != "unknown") {
            return Ok(());
        }
        if t0.elapsed() > Duration::from_secs(30) {
            bail!("the agents did not register within 30 s:\n{}", tail(&dir.join("agent1.log")));
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// Stop the daemons `f` names (as [`stop_pids`]).
pub fn stop(f: &UpFile) {
    stop_pids(&f.pids());
}

/// Stops the daemons however the test ends, and then any job still running
/// (jobs outlive their agents by design; a test cut short must not leave its
/// fillers behind): on return, on an error, and on SIGINT or SIGTERM (through
/// [`crate::interrupt`]).
pub struct Guard(pub Option<Local>, pub PathBuf);

impl Guard {
    /// `start_local` on the state directory `state`, guarded; says on stderr
    /// where the daemons' state is and how to stop them should this command be
    /// killed with SIGKILL (which nothing can catch).
    pub fn start(bin: &Path, state: &Path, cluster: &Option<PathBuf>, agents: usize, listen: std::net::SocketAddr, policy: &str, extra: &[String]) -> Result<Guard> {
        let local = start_local(bin, state, cluster, agents, listen, policy, extra, false)?;
        crate::interrupt::watch_dir(state, true);
        eprintln!(
            "tessera: controller (pid {}) and {} agent(s) started, state in {}; were this command killed, `tessera down --state-dir {}` stops them",
            local.controller.id(),
            local.agents.len(),
            state.display(),
            state.display()
        );
        Ok(Guard(Some(local), state.to_path_buf()))
    }
}

impl Drop for Guard {
    fn drop(&mut self) {
        if let Some(l) = self.0.take() {
            l.stop();
            kill_jobs(&self.1);
        }
    }
}

impl std::ops::Deref for Guard {
    type Target = Local;
    fn deref(&self) -> &Local {
        self.0.as_ref().expect("started")
    }
}

