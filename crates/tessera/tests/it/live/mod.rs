//! The live system end to end: a real controller and real agents (separate
//! processes of the `tessera` binary) on loopback, in a temp dir, running real
//! jobs; killed and restarted at will.

mod auth;
mod browser;
mod chaos;
mod cleanup;
mod e2e;
mod failstop;
mod loadtest;
mod naming;
mod netns;
mod privacy;
mod reconfigure;
mod recovery;
mod suspend;

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};
use tessera_proto::api::{JobInfo, NodeInfo};

pub const BIN: &str = env!("CARGO_BIN_EXE_tessera");

/// A controller and agents over the embedded default cluster (32 nodes of 8
/// cores, `node[001-032]`) or a cluster file whose nodes are named the same
/// way, the nodes split evenly among the agents.
pub struct Live {
    pub dir: tempfile::TempDir,
    pub port: u16,
    pub controller: Option<Child>,
    pub agents: Vec<Option<Child>>,
    heartbeat: u64,
    /// A cluster file (`node[001-NNN]`, `nodes` of them), or the default.
    cluster: Option<(PathBuf, usize)>,
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
        let dir = tempfile::tempdir().unwrap();
        let cluster = cluster.map(|(text, n)| {
            let p = dir.path().join("cluster.toml");
            std::fs::write(&p, text).unwrap();
            (p, n)
        });
        let mut l = Live { dir, port: free_port(), controller: None, agents: (0..agents).map(|_| None).collect(), heartbeat, cluster };
        l.start_controller();
        for k in 0..agents {
            l.start_agent(k);
        }
        l.wait_for("every node registered", 30, |l| l.nodes().iter().all(|n| n.state != "unknown"));
        l
    }

    pub fn state(&self) -> PathBuf {
        self.dir.path().join("state")
    }

    fn log(&self, name: &str) -> std::fs::File {
        std::fs::OpenOptions::new().create(true).append(true).open(self.dir.path().join(name)).unwrap()
    }

    pub fn start_controller(&mut self) {
        let _ = std::fs::remove_file(self.state().join("controller.json"));
        let c = Command::new(BIN)
            .args(["controller", "--state-dir", self.state().to_str().unwrap(), "--listen", &format!("127.0.0.1:{}", self.port)])
            .args(["--heartbeat-timeout", &self.heartbeat.to_string(), "--kill-grace", "1"])
            .args(self.cluster_args())
            .env("TESSERA_LOG", "info")
            .stdout(Stdio::null())
            .stderr(self.log("controller.log"))
            .spawn()
            .unwrap();
        self.controller = Some(c);
        let t0 = Instant::now();
        while !self.state().join("controller.json").exists() {
            assert!(t0.elapsed() < Duration::from_secs(30), "the controller did not start:\n{}", self.logs());
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    fn cluster_args(&self) -> Vec<String> {
        match &self.cluster {
            Some((p, _)) => vec!["--cluster".into(), p.display().to_string()],
            None => Vec::new(),
        }
    }

    pub fn agent_nodes(&self, k: usize) -> String {
        let n = self.agents.len();
        let total = self.cluster.as_ref().map_or(32, |c| c.1);
        let (lo, hi) = (k * total / n + 1, (k + 1) * total / n);
        format!("node[{lo:03}-{hi:03}]")
    }

    pub fn start_agent(&mut self, k: usize) {
        let c = Command::new(BIN)
            .args(["agent", "--name", &format!("agent{}", k + 1), "--controller", &format!("http://127.0.0.1:{}", self.port)])
            .args(["--key-file", self.state().join("cluster.key").to_str().unwrap(), "--nodes", &self.agent_nodes(k)])
            .args(if self.cluster.is_some() { self.cluster_args() } else { vec!["--default-cluster".into()] })
            .args(["--state-dir", self.dir.path().join(format!("agent{}", k + 1)).to_str().unwrap()])
            .env("TESSERA_LOG", "info")
            .stdout(Stdio::null())
            .stderr(self.log(&format!("agent{}.log", k + 1)))
            .spawn()
            .unwrap();
        self.agents[k] = Some(c);
    }

    pub fn kill9_controller(&mut self) {
        if let Some(mut c) = self.controller.take() {
            c.kill().unwrap();
            c.wait().unwrap();
        }
    }

    pub fn kill9_agent(&mut self, k: usize) {
        if let Some(mut c) = self.agents[k].take() {
            c.kill().unwrap();
            c.wait().unwrap();
        }
    }

    pub fn logs(&self) -> String {
        let mut s = String::new();
        for e in std::fs::read_dir(self.dir.path()).unwrap().flatten() {
            if e.path().extension().is_some_and(|x| x == "log") {
                let t = std::fs::read_to_string(e.path()).unwrap_or_default();
                let lines: Vec<&str> = t.lines().collect();
                s += &format!("--- {}\n{}\n", e.path().display(), lines[lines.len().saturating_sub(30)..].join("\n"));
            }
        }
        s
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
        String::from_utf8_lossy(&o.stdout)
            .lines()
            .skip(1)
            .filter_map(|l| {
                let (id, st) = l.split_once('|')?;
                Some((id.parse().ok()?, st.to_string()))
            })
            .collect()
    }

    pub fn wait_for(&self, what: &str, secs: u64, mut f: impl FnMut(&Live) -> bool) {
        let t0 = Instant::now();
        while !f(self) {
            assert!(t0.elapsed() < Duration::from_secs(secs), "timed out waiting for {what}\n{}", self.logs());
            std::thread::sleep(Duration::from_millis(100));
        }
    }
}

impl Drop for Live {
    fn drop(&mut self) {
        self.kill9_controller();
        for k in 0..self.agents.len() {
            self.kill9_agent(k);
        }
    }
}
