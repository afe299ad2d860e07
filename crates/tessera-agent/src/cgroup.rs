//! Confining jobs in cgroups, as Slurm's `task/cgroup` and `proctrack/cgroup`
//! do: a cgroup per job and one per step under it,
//! `tessera/AGENT-SPOOL/job_ID_ATTEMPT/step_STEP` (SPOOL a hash of the
//! agent's state directory: agents of two clusters on one host, named alike,
//! keep apart), on cgroup v2 where the host
//! mounts it at `/sys/fs/cgroup`, else on the v1 controllers mounted there
//! (detected when the agent starts, [`Hierarchy::detect`]).
//!
//! The job's cgroup holds its limits: the cores the engine allocated mapped
//! to the node's real cpus (`cpuset`, real nodes only), its memory with swap
//! off, a ceiling on its processes (`pids`), and its GPUs' device files only
//! (`devices`, v1). Its processes live in the steps' cgroups (v2 lets
//! processes live only in leaves), which keep each step's own counters.
//!
//! The cgroup is the job: its processes are found, signalled and killed
//! through it (a double-forked process included), it is frozen to suspend
//! the job, its counters are the job's CPU time, peak memory and
//! out-of-memory kills, and the job has ended once it is empty.

use std::fs;
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use tessera_proto::api::{CgroupUsage, Confinement, Control};

/// The agent's choice (`--cgroup`): confine jobs in cgroups where the host
/// allows it (`auto`, the default), insist on it (`cgroup`: the agent refuses
/// to start, with the reason, where it cannot), or not (`none`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    Auto,
    Cgroup,
    None,
}

impl std::str::FromStr for Mode {
    type Err = String;
    fn from_str(s: &str) -> Result<Mode, String> {
        match s {
            "auto" => Ok(Mode::Auto),
            "cgroup" => Ok(Mode::Cgroup),
            "none" => Ok(Mode::None),
            _ => Err(format!("{s:?}: expected auto, cgroup or none")),
        }
    }
}

/// The agent's confinement options (`tessera agent`).
#[derive(clap::Args, Debug, Clone)]
pub struct CgroupFlags {
    /// Confine each job and step in a cgroup: auto (wherever the host
    /// allows it), cgroup (refuse to start where it cannot, with the
    /// reason), or none.
    #[arg(long = "cgroup", env = "TESSERA_CGROUP", default_value = "auto")]
    pub mode: Mode,
    /// Each GPU's device file, by index (comma-separated; default: the
    /// host's /dev/nvidiaN): a job may open only those of its GPUs.
    #[arg(long, value_delimiter = ',')]
    pub gpu_devices: Vec<PathBuf>,
}

impl CgroupFlags {
    /// The agent's cgroups, and each node's confinement set to match: None
    /// where jobs are not confined (`none`, or `auto` where the host does
    /// not allow it); an error, with the reason, where `cgroup` was asked
    /// for and cannot be had.
    pub fn setup(&self, agent: &str, state_dir: &Path, nodes: &mut [tessera_proto::api::AgentNode], emulated: bool) -> Result<(Option<Hierarchy>, Vec<PathBuf>), String> {
        let gpu_devices = if self.gpu_devices.is_empty() {
            (0..).map(|i| PathBuf::from(format!("/dev/nvidia{i}"))).take_while(|p| p.exists()).collect()
        } else {
            self.gpu_devices.clone()
        };
        for d in &gpu_devices {
            device_numbers(d).map_err(|e| format!("--gpu-devices: {e}"))?;
        }
        if self.mode == Mode::None {
            return Ok((None, gpu_devices));
        }
        let h = Hierarchy::detect(&base_name(agent, state_dir)).and_then(|h| {
            let missing = h.missing(emulated);
            if missing.is_empty() {
                Ok(h)
            } else {
                let names: Vec<&str> = missing.iter().map(|c| c.name()).collect();
                Err(format!("cgroup v{}: no {} controller", h.version(), names.join(", ")))
            }
        });
        match h {
            Ok(mut h) => {
                h.keep_only(emulated, !gpu_devices.is_empty());
                for n in nodes.iter_mut() {
                    n.confinement = Some(h.confinement(emulated, !gpu_devices.is_empty()));
                }
                Ok((Some(h), gpu_devices))
            }
            Err(e) if self.mode == Mode::Cgroup => Err(format!("--cgroup cgroup: jobs cannot be confined on this host: {e}")),
            Err(e) => {
                tracing::warn!("jobs are not confined (--cgroup auto): {e}");
                Ok((None, gpu_devices))
            }
        }
    }
}

/// The agent's directory name in each hierarchy: its name and a hash of its
/// state directory (FNV-1a over the absolute path).
pub fn base_name(agent: &str, state_dir: &Path) -> String {
    let abs = std::path::absolute(state_dir).unwrap_or_else(|_| state_dir.to_path_buf());
    let mut h: u32 = 0x811c_9dc5;
    for b in abs.as_os_str().as_encoded_bytes() {
        h = (h ^ *b as u32).wrapping_mul(0x0100_0193);
    }
    let name: String = agent.chars().map(|c| if c.is_ascii_alphanumeric() || "._-".contains(c) { c } else { '_' }).collect();
    format!("{name}-{h:08x}")
}

/// One v1 controller's hierarchy (or v2's single one).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Ctl {
    Freezer,
    Cpuacct,
    Memory,
    Pids,
    Cpuset,
    Devices,
    /// cgroup v2: every controller in one hierarchy.
    Unified,
}

impl Ctl {
    fn v1_name(self) -> &'static str {
        match self {
            Ctl::Freezer => "freezer",
            Ctl::Cpuacct => "cpuacct",
            Ctl::Memory => "memory",
            Ctl::Pids => "pids",
            Ctl::Cpuset => "cpuset",
            Ctl::Devices => "devices",
            Ctl::Unified => "",
        }
    }
}

/// The cgroups an agent makes its jobs' under: each hierarchy's
/// `tessera/AGENT` directory.
#[derive(Debug, Clone)]
pub struct Hierarchy {
    version: u8,
    bases: Vec<(Ctl, PathBuf)>,
    controls: Vec<Control>,
    /// v2's `cgroup.kill` (Linux 5.14) is there.
    kill_file: bool,
}

/// What a job's cgroup on one node holds it to.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Limits {
    /// The host cpus it may run on (None: the agent's own, an emulated node).
    pub cpus: Option<Vec<u32>>,
    pub memory_bytes: Option<u64>,
    pub pids_max: Option<u64>,
    /// Device files (type, major, minor) it may not open: the node's GPUs
    /// it was not given.
    pub deny: Vec<(char, u32, u32)>,
}

/// A reused slot's cgroup keeps up to this much of its last job's page cache
/// (16 MiB): giving every byte back costs a reclaim per job (BENCHMARKS.md).
const RELEASE_ABOVE: u64 = 16 << 20;

/// The controls every confined job gets; a node whose host lacks one cannot
/// confine its jobs.
const REQUIRED: [Control; 3] = [Control::Memory, Control::Pids, Control::Freezer];

fn read(p: &Path) -> io::Result<String> {
    fs::read_to_string(p).map_err(|e| io::Error::new(e.kind(), format!("{}: {e}", p.display())))
}

fn write(p: &Path, v: &str) -> io::Result<()> {
    // one write of the whole value: a control file takes each write whole
    let mut f = fs::OpenOptions::new().write(true).open(p).map_err(|e| io::Error::new(e.kind(), format!("{}: {e}", p.display())))?;
    f.write_all(v.as_bytes()).map_err(|e| io::Error::new(e.kind(), format!("writing {v:?} to {}: {e}", p.display())))
}

fn mkdir(p: &Path) -> io::Result<()> {
    match fs::create_dir(p) {
        Err(e) if e.kind() != io::ErrorKind::AlreadyExists => Err(io::Error::new(e.kind(), format!("creating {}: {e}", p.display()))),
        _ => Ok(()),
    }
}

/// A cpu list as the kernel writes it (`0-3,8,10-11`).
pub fn parse_cpu_list(s: &str) -> Option<Vec<u32>> {
    let mut out = Vec::new();
    for part in s.trim().split(',').filter(|p| !p.is_empty()) {
        match part.split_once('-') {
            Some((a, b)) => out.extend(a.parse::<u32>().ok()?..=b.parse::<u32>().ok()?),
            None => out.push(part.parse().ok()?),
        }
    }
    Some(out)
}

/// A cpu list in the kernel's form.
pub fn cpu_list(cpus: &[u32]) -> String {
    let mut s = String::new();
    let mut i = 0;
    while i < cpus.len() {
        let mut j = i;
        while j + 1 < cpus.len() && cpus[j + 1] == cpus[j] + 1 {
            j += 1;
        }
        if !s.is_empty() {
            s.push(',');
        }
        s += &if j > i { format!("{}-{}", cpus[i], cpus[j]) } else { cpus[i].to_string() };
        i = j + 1;
    }
    s
}

/// The value of `key` in a flat-keyed file (`oom_kill 3`, `usage_usec 12`).
fn key_value(text: &str, key: &str) -> Option<u64> {
    text.lines().find_map(|l| l.strip_prefix(key)?.strip_prefix(' ')?.trim().parse().ok())
}

impl Hierarchy {
    /// Find the host's cgroups and make the agent's directories in them: v2
    /// where `/sys/fs/cgroup` is a cgroup2 mount, else the v1 controllers
    /// mounted under it. The error says why jobs cannot be confined here.
    pub fn detect(agent: &str) -> Result<Hierarchy, String> {
        let mounts = fs::read_to_string("/proc/self/mounts").map_err(|e| format!("reading /proc/self/mounts: {e}"))?;
        let mut v1 = Vec::new();
        let mut v2 = None;
        for l in mounts.lines() {
            let f: Vec<&str> = l.split(' ').collect();
            if f.len() < 4 {
                continue;
            }
            match f[2] {
                "cgroup2" if f[1] == "/sys/fs/cgroup" => v2 = Some(PathBuf::from(f[1])),
                "cgroup" => {
                    for o in f[3].split(',') {
                        for c in [Ctl::Freezer, Ctl::Cpuacct, Ctl::Memory, Ctl::Pids, Ctl::Cpuset, Ctl::Devices] {
                            if o == c.v1_name() && !v1.iter().any(|(x, _)| *x == c) {
                                v1.push((c, PathBuf::from(f[1])));
                            }
                        }
                    }
                }
                _ => {}
            }
        }
        match v2 {
            Some(root) => Hierarchy::v2_at(&root, agent),
            None if v1.is_empty() => Err("no cgroup hierarchy is mounted (neither cgroup2 at /sys/fs/cgroup nor v1 controllers)".into()),
            None => Hierarchy::v1_at(v1, agent),
        }
    }

    /// The v1 controllers mounted at the given places.
    fn v1_at(mounts: Vec<(Ctl, PathBuf)>, agent: &str) -> Result<Hierarchy, String> {
        for need in [Ctl::Freezer, Ctl::Memory, Ctl::Pids, Ctl::Cpuacct] {
            if !mounts.iter().any(|(c, _)| *c == need) {
                return Err(format!("cgroup v1: the {} controller is not mounted", need.v1_name()));
            }
        }
        let mut bases = Vec::new();
        for (c, m) in mounts {
            let top = m.join("tessera");
            let base = top.join(agent);
            for d in [&top, &base] {
                mkdir(d).map_err(|e| format!("cgroup v1: {e}"))?;
                if c == Ctl::Cpuset {
                    // a cpuset takes no process before it has cpus and mems
                    inherit_cpuset(d).map_err(|e| format!("cgroup v1: {e}"))?;
                }
            }
            bases.push((c, base));
        }
        let mut controls = vec![Control::Memory, Control::Pids, Control::Freezer];
        if bases.iter().any(|(c, _)| *c == Ctl::Cpuset) {
            controls.push(Control::Cpuset);
        }
        if bases.iter().any(|(c, _)| *c == Ctl::Devices) {
            controls.push(Control::Devices);
        }
        controls.sort();
        Ok(Hierarchy { version: 1, bases, controls, kill_file: false })
    }

    /// cgroup v2 with `root` as the hierarchy's root (the mount point, or a
    /// delegated subtree), the agent's directory `root/tessera/AGENT`. A
    /// control whose controller the root does not offer is not in force.
    pub fn v2_at(root: &Path, agent: &str) -> Result<Hierarchy, String> {
        let offered = read(&root.join("cgroup.controllers")).map_err(|e| format!("cgroup v2: {e}"))?;
        let offered: Vec<&str> = offered.split_whitespace().collect();
        let want: Vec<&str> = ["cpuset", "cpu", "memory", "pids"].into_iter().filter(|c| offered.contains(c)).collect();
        let enable = want.iter().map(|c| format!("+{c}")).collect::<Vec<_>>().join(" ");
        let top = root.join("tessera");
        let base = top.join(agent);
        for d in [root, top.as_path(), base.as_path()] {
            if d != root {
                mkdir(d).map_err(|e| format!("cgroup v2: {e}"))?;
            }
            if !enable.is_empty() {
                write(&d.join("cgroup.subtree_control"), &enable).map_err(|e| format!("cgroup v2: {e}"))?;
            }
        }
        if !base.join("cgroup.freeze").exists() {
            return Err("cgroup v2: no cgroup.freeze (Linux 5.2 or later is needed)".into());
        }
        // devices: an eBPF program on the job's cgroup (crate::bpf)
        let mut controls = vec![Control::Freezer, Control::Devices];
        for (c, ctl) in [("memory", Control::Memory), ("pids", Control::Pids), ("cpuset", Control::Cpuset)] {
            if want.contains(&c) {
                controls.push(ctl);
            }
        }
        controls.sort();
        let kill_file = base.join("cgroup.kill").exists();
        Ok(Hierarchy { version: 2, bases: vec![(Ctl::Unified, base)], controls, kill_file })
    }

    /// The controls in force on a node: on an emulated one (its cores not
    /// the host's) no cpuset, and devices only where it has GPU device files.
    pub fn confinement(&self, emulated: bool, gpu_devices: bool) -> Confinement {
        let controls = self.controls.iter().copied().filter(|c| !(*c == Control::Cpuset && emulated) && !(*c == Control::Devices && !gpu_devices)).collect();
        Confinement { version: self.version, controls }
    }

    /// Leave out the hierarchies no job of these nodes uses (a cgroup made
    /// in each costs a launch time): the cpuset on emulated nodes, the
    /// devices where there are no GPU device files.
    pub fn keep_only(&mut self, emulated: bool, gpu_devices: bool) {
        self.bases.retain(|(c, _)| !(*c == Ctl::Cpuset && emulated) && !(*c == Ctl::Devices && !gpu_devices));
        self.controls.retain(|c| !(*c == Control::Cpuset && emulated) && !(*c == Control::Devices && !gpu_devices));
    }

    /// The controls this hierarchy lacks for a node (`cgroup` mode refuses
    /// to start without them): memory, pids and the freezer everywhere, and
    /// the cpuset on a real node.
    pub fn missing(&self, emulated: bool) -> Vec<Control> {
        let mut need = REQUIRED.to_vec();
        if !emulated {
            need.push(Control::Cpuset);
        }
        need.into_iter().filter(|c| !self.controls.contains(c)).collect()
    }

    pub fn version(&self) -> u8 {
        self.version
    }

    /// A job's cgroup (made by [`JobGroup::create`]).
    pub fn job(&self, job: u64, attempt: u32) -> JobGroup {
        self.named(&format!("job_{job}_{attempt}"))
    }

    /// On v1, the cgroup of the agent's spool slot `n`: made once and reused
    /// by each job the slot runs (its limits written again and its counters
    /// reset at each launch, [`JobGroup::reuse`]), as the slot's files are:
    /// a cgroup made and removed in each of four hierarchies costs more
    /// than the rest of a launch. None on v2 (a job's cgroup of its own).
    pub fn slot(&self, n: u32) -> Option<JobGroup> {
        (self.version == 1).then(|| self.named(&format!("slot_{n}")))
    }

    /// The cgroup of this name in the agent's directory (`slot_N` is pooled).
    pub fn named(&self, name: &str) -> JobGroup {
        JobGroup { version: self.version, dirs: self.bases.iter().map(|(c, b)| (*c, b.join(name))).collect(), kill_file: self.kill_file, pooled: name.starts_with("slot_") }
    }

    /// The spool slots that have a cgroup in the agent's directory.
    pub fn slots(&self) -> Vec<u32> {
        let Some((_, base)) = self.bases.iter().find(|(c, _)| matches!(c, Ctl::Freezer | Ctl::Unified)) else { return Vec::new() };
        let mut out: Vec<u32> = fs::read_dir(base).map(|d| d.filter_map(|e| e.ok()?.file_name().into_string().ok()?.strip_prefix("slot_")?.parse().ok()).collect()).unwrap_or_default();
        out.sort_unstable();
        out
    }

    /// The jobs whose cgroups are in the agent's directory, (job, attempt).
    pub fn jobs(&self) -> Vec<(u64, u32)> {
        let Some((_, base)) = self.bases.iter().find(|(c, _)| matches!(c, Ctl::Freezer | Ctl::Unified)) else { return Vec::new() };
        let mut out: Vec<(u64, u32)> = fs::read_dir(base)
            .map(|d| {
                d.filter_map(|e| {
                    let n = e.ok()?.file_name().into_string().ok()?;
                    let (j, a) = n.strip_prefix("job_")?.split_once('_')?;
                    Some((j.parse().ok()?, a.parse().ok()?))
                })
                .collect()
            })
            .unwrap_or_default();
        out.sort_unstable();
        out
    }
}

/// Copy a v1 cpuset's parent's cpus and mems into it if it has none.
fn inherit_cpuset(d: &Path) -> io::Result<()> {
    let parent = d.parent().expect("a cgroup below the mount");
    for f in ["cpuset.cpus", "cpuset.mems"] {
        if read(&d.join(f))?.trim().is_empty() {
            write(&d.join(f), read(&parent.join(f))?.trim())?;
        }
    }
    Ok(())
}

/// One job's cgroup on one node: its directory in each hierarchy.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JobGroup {
    version: u8,
    dirs: Vec<(Ctl, PathBuf)>,
    kill_file: bool,
    /// A spool slot's, reused from job to job (released, not removed).
    pub pooled: bool,
}

impl JobGroup {
    fn dir(&self, c: Ctl) -> Option<&Path> {
        self.dirs.iter().find(|(x, _)| *x == c || *x == Ctl::Unified).map(|(_, d)| d.as_path())
    }

    /// The directory that tracks the processes (v1's freezer, v2's one).
    fn tracking(&self) -> &Path {
        self.dir(Ctl::Freezer).expect("the freezer hierarchy is required")
    }

    /// Make the job's cgroup with its limits (or find it made, after a
    /// restart: the limits are written again).
    pub fn create(&self, l: &Limits) -> io::Result<()> {
        // a reused slot's cgroup is there already (one stat, not a mkdir each)
        let made = self.pooled && self.dirs.iter().all(|(_, d)| d.exists());
        for (c, d) in &self.dirs {
            if !made {
                mkdir(d)?;
            }
            match c {
                Ctl::Cpuset => {
                    let parent = d.parent().expect("below the agent's directory");
                    write(&d.join("cpuset.mems"), read(&parent.join("cpuset.mems"))?.trim())?;
                    let cpus = l.cpus.as_ref().map_or_else(|| read(&parent.join("cpuset.cpus")).map(|s| s.trim().to_string()), |c| Ok(cpu_list(c)))?;
                    write(&d.join("cpuset.cpus"), &cpus)?;
                }
                Ctl::Memory => {
                    if let Some(b) = l.memory_bytes {
                        // the limit first: memory+swap may not be below it; a
                        // reused slot's cache over the new limit is given back
                        // first if reclaim alone cannot make room
                        let limit = d.join("memory.limit_in_bytes");
                        let set_limit = || {
                            if write(&limit, &b.to_string()).is_err() {
                                let _ = write(&d.join("memory.force_empty"), "0");
                                write(&limit, &b.to_string())?;
                            }
                            Ok::<(), io::Error>(())
                        };
                        let memsw = d.join("memory.memsw.limit_in_bytes");
                        if memsw.exists() {
                            // memory + swap is never below memory: raised
                            // first when a reused slot's limit goes up
                            let now: u64 = read(&limit)?.trim().parse().unwrap_or(u64::MAX);
                            if b > now {
                                write(&memsw, &b.to_string())?;
                                set_limit()?;
                            } else {
                                set_limit()?;
                                write(&memsw, &b.to_string())?;
                            }
                        } else {
                            set_limit()?;
                            write(&d.join("memory.swappiness"), "0")?;
                        }
                    }
                }
                Ctl::Pids => {
                    if let Some(n) = l.pids_max {
                        write(&d.join("pids.max"), &n.to_string())?;
                    }
                }
                Ctl::Devices => {
                    // a reused slot's: what its last job was denied, allowed again
                    if self.pooled {
                        write(&d.join("devices.allow"), "a *:* rwm")?;
                    }
                    for (t, major, minor) in &l.deny {
                        write(&d.join("devices.deny"), &format!("{t} {major}:{minor} rwm"))?;
                    }
                }
                Ctl::Freezer | Ctl::Cpuacct => {}
                Ctl::Unified => {
                    if let Some(cpus) = &l.cpus {
                        if d.join("cpuset.cpus").exists() {
                            write(&d.join("cpuset.cpus"), &cpu_list(cpus))?;
                        }
                    }
                    if let Some(b) = l.memory_bytes {
                        if d.join("memory.max").exists() {
                            write(&d.join("memory.max"), &b.to_string())?;
                            if d.join("memory.swap.max").exists() {
                                write(&d.join("memory.swap.max"), "0")?;
                            }
                        }
                    }
                    if let (Some(n), true) = (l.pids_max, d.join("pids.max").exists()) {
                        write(&d.join("pids.max"), &n.to_string())?;
                    }
                    if !l.deny.is_empty() {
                        crate::bpf::deny_devices(d, &l.deny)?;
                    }
                    // the steps below get the controllers the job has
                    let enable: Vec<String> = read(&d.join("cgroup.controllers"))?.split_whitespace().map(|c| format!("+{c}")).collect();
                    if !enable.is_empty() {
                        write(&d.join("cgroup.subtree_control"), &enable.join(" "))?;
                    }
                }
            }
        }
        Ok(())
    }

    /// A step's cgroup below the job's (made by [`JobGroup::create_step`]),
    /// as a group of its own: its processes, signals, freezer, counters.
    pub fn step(&self, step: &str) -> JobGroup {
        JobGroup { version: self.version, dirs: self.dirs.iter().map(|(c, d)| (*c, d.join(format!("step_{step}")))).collect(), kill_file: self.kill_file, pooled: false }
    }

    /// Ready a slot's cgroup (v1) for its next job: its counters reset (CPU
    /// time, peak memory); returns the out-of-memory kills counted so far,
    /// which cannot be reset (the job's are those past it).
    pub fn reuse(&self) -> u64 {
        for (c, d) in &self.dirs {
            match c {
                Ctl::Cpuacct => drop(write(&d.join("cpuacct.usage"), "0")),
                Ctl::Memory => drop(write(&d.join("memory.max_usage_in_bytes"), "0")),
                _ => {}
            }
        }
        self.usage(None).oom_kills
    }

    /// A slot's cgroup once its job ended and it is empty: its steps' cgroups
    /// removed. The page cache its job left stays charged to it (reclaimable
    /// under the next job's limit; forcing it out costs a reclaim per job).
    pub fn release(&self) {
        for (c, d) in &self.dirs {
            for s in children(d) {
                let _ = fs::remove_dir(s);
            }
            // more than a little cache left (a job that wrote large files) is
            // given back, so that the next job's peak is its own
            if *c == Ctl::Memory && fs::read_to_string(d.join("memory.usage_in_bytes")).ok().and_then(|s| s.trim().parse::<u64>().ok()).is_some_and(|b| b > RELEASE_ABOVE) {
                let _ = write(&d.join("memory.force_empty"), "0");
            }
        }
    }

    /// The files the batch script's first process writes itself into: on v1
    /// the job's own cgroup (a job without steps makes no second level; the
    /// batch step's counters are then the job's on its first node), on v2 a
    /// `batch` step's (there processes live only in leaves).
    pub fn enter_batch(&self) -> io::Result<Vec<PathBuf>> {
        match self.version {
            2 => self.create_step("batch"),
            _ => Ok(self.dirs.iter().map(|(_, d)| d.join("cgroup.procs")).collect()),
        }
    }

    /// Make a step's cgroup below the job's; returns the files a process
    /// writes `0` to, to enter it (one per hierarchy).
    pub fn create_step(&self, step: &str) -> io::Result<Vec<PathBuf>> {
        let mut procs = Vec::new();
        for (c, d) in &self.dirs {
            let s = d.join(format!("step_{step}"));
            mkdir(&s)?;
            if *c == Ctl::Cpuset {
                inherit_cpuset(&s)?;
            }
            procs.push(s.join("cgroup.procs"));
        }
        Ok(procs)
    }

    /// The pids of every process in the job's cgroup (its steps' included).
    pub fn pids(&self) -> Vec<i32> {
        let mut out = Vec::new();
        collect_pids(self.tracking(), &mut out);
        out
    }

    /// Whether no process is left in it (or it is gone).
    pub fn empty(&self) -> bool {
        let t = self.tracking();
        if self.version == 2 {
            return fs::read_to_string(t.join("cgroup.events")).map_or(true, |e| key_value(&e, "populated") == Some(0));
        }
        self.pids().is_empty()
    }

    /// Send `sig` to every process in it.
    pub fn signal(&self, sig: i32) {
        for p in self.pids() {
            // SAFETY: a plain system call.
            unsafe { libc::kill(p, sig) };
        }
    }

    /// Kill every process in it: v2's `cgroup.kill`, else frozen first so
    /// that nothing forks meanwhile, SIGKILL to each, thawed (a frozen
    /// process dies once thawed).
    pub fn kill(&self) {
        if self.kill_file && write(&self.tracking().join("cgroup.kill"), "1").is_ok() {
            return;
        }
        let _ = self.freeze(true);
        self.signal(libc::SIGKILL);
        let _ = self.freeze(false);
    }

    /// Freeze (suspend) or thaw the job.
    pub fn freeze(&self, frozen: bool) -> io::Result<()> {
        let t = self.tracking();
        match self.version {
            2 => write(&t.join("cgroup.freeze"), if frozen { "1" } else { "0" }),
            _ => write(&t.join("freezer.state"), if frozen { "FROZEN" } else { "THAWED" }),
        }
    }

    /// Whether the freezer has stopped every process of it.
    pub fn frozen(&self) -> bool {
        let t = self.tracking();
        match self.version {
            2 => fs::read_to_string(t.join("cgroup.events")).is_ok_and(|e| key_value(&e, "frozen") == Some(1)),
            _ => fs::read_to_string(t.join("freezer.state")).is_ok_and(|s| s.trim() == "FROZEN"),
        }
    }

    /// The counters of the job (`step` None) or of one of its steps.
    pub fn usage(&self, step: Option<&str>) -> CgroupUsage {
        let at = |d: &Path| step.map_or_else(|| d.to_path_buf(), |s| d.join(format!("step_{s}")));
        let mut u = CgroupUsage::default();
        if self.version == 2 {
            let d = at(self.tracking());
            let stat = fs::read_to_string(d.join("cpu.stat")).unwrap_or_default();
            u.cpu_s = key_value(&stat, "usage_usec").unwrap_or(0) as f64 / 1e6;
            u.max_rss_kb = fs::read_to_string(d.join("memory.peak")).ok().and_then(|s| s.trim().parse::<u64>().ok()).unwrap_or(0) / 1024;
            u.oom_kills = fs::read_to_string(d.join("memory.events")).ok().and_then(|e| key_value(&e, "oom_kill")).unwrap_or(0);
            let stall = |f: &str| -> Option<f64> {
                let t = fs::read_to_string(d.join(f)).ok()?;
                let some = t.lines().find(|l| l.starts_with("some "))?;
                Some(some.split(' ').find_map(|w| w.strip_prefix("total="))?.parse::<u64>().ok()? as f64 / 1e6)
            };
            u.pressure_s = stall("cpu.pressure").zip(stall("memory.pressure"));
            return u;
        }
        if let Some(d) = self.dir(Ctl::Cpuacct) {
            u.cpu_s = fs::read_to_string(at(d).join("cpuacct.usage")).ok().and_then(|s| s.trim().parse::<u64>().ok()).unwrap_or(0) as f64 / 1e9;
        }
        if let Some(d) = self.dir(Ctl::Memory) {
            let d = at(d);
            u.max_rss_kb = fs::read_to_string(d.join("memory.max_usage_in_bytes")).ok().and_then(|s| s.trim().parse::<u64>().ok()).unwrap_or(0) / 1024;
            // v1 counts a kill in the victim's own cgroup: the job's is the
            // sum of its own and its steps'
            let oom = |d: &Path| fs::read_to_string(d.join("memory.oom_control")).ok().and_then(|e| key_value(&e, "oom_kill")).unwrap_or(0);
            u.oom_kills = oom(&d);
            if step.is_none() {
                u.oom_kills += children(&d).iter().map(|c| oom(c)).sum::<u64>();
            }
        }
        u
    }

    /// Remove a step's cgroup (once it is empty).
    pub fn remove_step(&self, step: &str) {
        for (_, d) in &self.dirs {
            let _ = fs::remove_dir(d.join(format!("step_{step}")));
        }
    }

    /// Remove the job's cgroup and its steps' (once it is empty): true if
    /// nothing is left of it.
    pub fn remove(&self) -> bool {
        let mut gone = true;
        for (_, d) in &self.dirs {
            for c in children(d) {
                let _ = fs::remove_dir(c);
            }
            if let Err(e) = fs::remove_dir(d) {
                gone &= e.kind() == io::ErrorKind::NotFound;
            }
        }
        gone
    }

    /// Its directory's name (`slot_3`, `job_12_1`).
    pub fn name(&self) -> String {
        self.tracking().file_name().map_or(String::new(), |n| n.to_string_lossy().to_string())
    }

    /// Whether its directory exists.
    pub fn exists(&self) -> bool {
        self.tracking().exists()
    }
}

/// A cgroup's subdirectories, read only when it has any (a cgroup
/// directory's link count is 2 plus its subdirectories: one `stat` instead
/// of listing its control files).
fn children(d: &Path) -> Vec<PathBuf> {
    use std::os::unix::fs::MetadataExt;
    if fs::metadata(d).map_or(true, |m| m.nlink() <= 2) {
        return Vec::new();
    }
    fs::read_dir(d).map(|rd| rd.flatten().filter(|e| e.file_type().is_ok_and(|t| t.is_dir())).map(|e| e.path()).collect()).unwrap_or_default()
}

fn collect_pids(d: &Path, out: &mut Vec<i32>) {
    if let Ok(t) = fs::read_to_string(d.join("cgroup.procs")) {
        out.extend(t.lines().filter_map(|l| l.trim().parse::<i32>().ok()));
    }
    for c in children(d) {
        collect_pids(&c, out);
    }
}

/// The host cpus this process may run on (a real node's cores, in order).
pub fn host_cpus() -> Vec<u32> {
    // SAFETY: a zeroed cpu_set_t is a valid empty set, filled by the call.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        if libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set) != 0 {
            return (0..std::thread::available_parallelism().map_or(1, |n| n.get() as u32)).collect();
        }
        (0..libc::CPU_SETSIZE as usize).filter(|&c| libc::CPU_ISSET(c, &set)).map(|c| c as u32).collect()
    }
}

/// A character device's (major, minor).
pub fn device_numbers(path: &Path) -> io::Result<(char, u32, u32)> {
    use std::os::unix::fs::{FileTypeExt, MetadataExt};
    let m = fs::metadata(path)?;
    let t = if m.file_type().is_char_device() {
        'c'
    } else if m.file_type().is_block_device() {
        'b'
    } else {
        return Err(io::Error::new(io::ErrorKind::InvalidInput, format!("{} is not a device file", path.display())));
    };
    let rdev = m.rdev();
    Ok((t, libc::major(rdev), libc::minor(rdev)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_lists_round_trip_in_the_kernels_form() {
        assert_eq!(cpu_list(&[0, 1, 2, 3, 8, 10, 11]), "0-3,8,10-11");
        assert_eq!(parse_cpu_list("0-3,8,10-11\n"), Some(vec![0, 1, 2, 3, 8, 10, 11]));
        assert_eq!(cpu_list(&[5]), "5");
        assert_eq!(parse_cpu_list(""), Some(vec![]));
        assert_eq!(parse_cpu_list("x"), None);
    }

    #[test]
    fn flat_keyed_files_are_read_by_key() {
        let t = "oom_kill_disable 0\nunder_oom 0\noom_kill 3\n";
        assert_eq!(key_value(t, "oom_kill"), Some(3));
        assert_eq!(key_value(t, "under_oom"), Some(0));
        assert_eq!(key_value("populated 1\nfrozen 0\n", "frozen"), Some(0));
    }
}
