//! The live system end to end: a real controller and real agents (separate
//! processes of the `tessera` binary) on loopback, in a temp dir, running real
//! jobs; killed and restarted at will.

mod accounts;
mod auth;
mod cgroups;
mod browser;
mod chaos;
mod cleanup;
mod devices;
mod e2e;
mod failstop;
mod loadtest;
mod mpi;
mod naming;
mod netns;
mod power;
mod privacy;
mod reconfigure;
mod reservations;
mod recovery;
mod steps;
mod suspend;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::{Duration, Instant};
use tessera_emulation::local::{start_local, Local};
use tessera_proto::api::{JobInfo, NodeInfo};

pub const BIN: &str = env!("CARGO_BIN_EXE_tessera");

/// A controller and agents over the embedded default cluster (32 nodes of 8
/// cores, `node[001-032]`) or a cluster file whose nodes are named the same
/// way, the nodes split evenly among the agents: a local cluster started as
/// `tessera up` starts one (`tessera_emulation::local`), state in `DIR/state`
/// (the agents' spools in `DIR/state/agents/agentK`, every daemon's log
/// beside), on a fixed port so that a restarted controller is where it was.
pub struct Live {
    pub dir: tempfile::TempDir,
    pub port: u16,
    pub local: Local,
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

impl Live {
    pub fn start(agents: usize, heartbeat: u64) -> Live {
        Live::start_on(agents, heartbeat, None)
    }

    /// On the cluster of the TOML text `cluster` with `nodes` nodes named
    /// `node[001-NNN]`.
    pub fn start_on(agents: usize, heartbeat: u64, cluster: Option<(&str, usize)>) -> Live {
        Live::start_with(agents, heartbeat, cluster, "easy", &[])
    }

    /// As [`Live::start_on`], under `policy`, the controller given `extra` flags.
    pub fn start_with(agents: usize, heartbeat: u64, cluster: Option<(&str, usize)>, policy: &str, extra: &[&str]) -> Live {
        let dir = tempfile::tempdir().unwrap();
        let file = cluster.map(|(text, _)| {
            let p = dir.path().join("cluster.toml");
            std::fs::write(&p, text).unwrap();
            p
        });
        let state = dir.path().join("state");
        tessera_proto::statedir::create_dir(&state).unwrap();
        let port = free_port();
        let mut args = vec!["--heartbeat-timeout".to_string(), heartbeat.to_string(), "--kill-grace".into(), "1".into()];
        args.extend(extra.iter().map(|s| s.to_string()));
        let local = start_local(Path::new(BIN), &state, &file, agents, format!("127.0.0.1:{port}").parse().unwrap(), policy, &args, false)
            .unwrap_or_else(|e| panic!("starting a local cluster: {e:#}\n{}", logs_in(&state)));
        Live { dir, port, local }
    }

    pub fn state(&self) -> PathBuf {
        self.dir.path().join("state")
    }

    /// Agent `k`'s spool (from 0).
    pub fn agent_state(&self, k: usize) -> PathBuf {
        self.state().join("agents").join(format!("agent{}", k + 1))
    }

    pub fn controller_pid(&self) -> u32 {
        self.local.controller.id()
    }

    pub fn agent_pid(&self, k: usize) -> u32 {
        self.local.agents[k].id()
    }

    /// Start the controller again (after `kill9_controller`), as it first started.
    pub fn start_controller(&mut self) {
        if let Err(e) = self.local.restart_controller() {
            panic!("restarting the controller: {e:#}\n{}", self.logs());
        }
    }

    /// The nodes agent `k` presents (the embedded default's or `node[001-NNN]`).
    pub fn agent_nodes(&self, k: usize) -> String {
        let (n, total) = (self.local.agents.len(), self.local.cluster.nodes.len());
        let (lo, hi) = (k * total / n + 1, (k + 1) * total / n);
        format!("node[{lo:03}-{hi:03}]")
    }

    /// Start agent `k` again (after `kill9_agent`), as it first started.
    pub fn start_agent(&mut self, k: usize) {
        self.local.restart_agent(k).unwrap();
    }

    /// The controller's `/metrics` text.
    pub fn metrics(&self) -> String {
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        let mut c = tessera_proto::client::Client::new(tessera_proto::client::Target::Unix(self.local.ep.socket.clone()), None);
        match rt.block_on(c.raw(hyper::Method::GET, "/metrics", None)) {
            Ok((_, body)) => String::from_utf8_lossy(&body).to_string(),
            Err(_) => String::new(),
        }
    }

    pub fn kill9_controller(&mut self) {
        let _ = self.local.kill9_controller();
    }

    pub fn kill9_agent(&mut self, k: usize) {
        let _ = self.local.kill9_agent(k);
    }

    pub fn logs(&self) -> String {
        logs_in(&self.state()) + &logs_in(self.dir.path())
    }

    /// Run a client command against this controller (over its Unix socket),
    /// from `cwd`.
    pub fn cli_in(&self, cwd: &Path, args: &[&str]) -> Output {
        Command::new(BIN).args(args).current_dir(cwd).env("TESSERA_STATE_DIR", self.state()).env_remove("TESSERA_CONTROLLER").env_remove("TESSERA_TOKEN").output().unwrap()
    }

    pub fn cli(&self, args: &[&str]) -> Output {
        self.cli_in(self.dir.path(), args)
    }

    /// Submit; the job id.
    pub fn submit(&self, args: &[&str]) -> u64 {
        let o = self.cli(&[&["job", "submit", "--parsable"], args].concat());
        assert!(o.status.success(), "submit {args:?}: {}\n{}", String::from_utf8_lossy(&o.stderr), self.logs());
        String::from_utf8_lossy(&o.stdout).trim().parse().unwrap()
    }

    pub fn jobs(&self) -> Vec<JobInfo> {
        let o = self.cli(&["queue", "--all", "--format", "json"]);
        if !o.status.success() {
            return Vec::new();
        }
        serde_json::from_slice(&o.stdout).unwrap_or_default()
    }

    pub fn job(&self, id: u64) -> Option<JobInfo> {
        self.jobs().into_iter().find(|j| j.id == id)
    }

    pub fn nodes(&self) -> Vec<NodeInfo> {
        let o = self.cli(&["nodes", "--format", "json"]);
        if !o.status.success() {
            return Vec::new();
        }
        serde_json::from_slice(&o.stdout).unwrap_or_default()
    }

    /// The accounting store's rows: (job id, state), one per row.
    pub fn acct(&self) -> Vec<(u64, String)> {
        let o = self.cli(&["acct", "-P", "-o", "JobIDRaw,State"]);
        if !o.status.success() {
            return Vec::new();
        }
        acct_rows(&o.stdout)
    }

    pub fn wait_for(&self, what: &str, secs: u64, mut f: impl FnMut(&Live) -> bool) {
        let t0 = Instant::now();
        while !f(self) {
            assert!(t0.elapsed() < Duration::from_secs(secs), "timed out waiting for {what}\n{}", self.logs());
            std::thread::sleep(Duration::from_millis(100));
        }
    }
}

/// The last lines of every log in `dir`.
fn logs_in(dir: &Path) -> String {
    let mut s = String::new();
    for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        if e.path().extension().is_some_and(|x| x == "log") {
            let t = std::fs::read_to_string(e.path()).unwrap_or_default();
            let lines: Vec<&str> = t.lines().collect();
            s += &format!("--- {}\n{}\n", e.path().display(), lines[lines.len().saturating_sub(30)..].join("\n"));
        }
    }
    s
}

impl Drop for Live {
    fn drop(&mut self) {
        self.kill9_controller();
        for k in 0..self.local.agents.len() {
            self.kill9_agent(k);
        }
    }
}

/// `tessera acct -P -o JobIDRaw,State`'s rows: (job id, state).
pub fn acct_rows(stdout: &[u8]) -> Vec<(u64, String)> {
    String::from_utf8_lossy(stdout)
        .lines()
        .skip(1)
        .filter_map(|l| {
            let (id, st) = l.split_once('|')?;
            Some((id.parse().ok()?, st.to_string()))
        })
        .collect()
}

/// `tessera down` on a state directory that `tessera up --detach` started,
/// however the test ends (a failed assertion included).
pub struct Down<'a>(pub &'a Path);

impl Drop for Down<'_> {
    fn drop(&mut self) {
        let _ = Command::new(BIN).args(["down", "--state-dir"]).arg(self.0).output();
    }
}
