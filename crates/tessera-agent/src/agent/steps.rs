//! A job's steps on this agent's nodes (`tessera run`): each node's tasks
//! start under shepherds as the batch script does (their records in the
//! spool, so a restarted agent re-adopts them), in the step's own cgroup
//! below the job's, their output and error connected to the step's client;
//! once every task of the node has ended and the step's cgroup is empty,
//! the node's part of the step is reported with the cgroup's counters.

use super::*;
use tessera_proto::api::{StepExit, StepLaunch, TaskIo};

/// One task of a step on this node.
pub(super) struct Task {
    pub procid: u32,
    pub slot: Slot,
    pub owner: u32,
    pub pids: Option<Spawned>,
    pub ours: bool,
    /// (code, signal) once it ended.
    pub exit: Option<(Option<i32>, Option<i32>)>,
}

/// A node's part of a step.
pub(super) struct StepRun {
    pub node: String,
    pub tasks: Vec<Task>,
    /// The step's cgroup (below the job's), when confined.
    pub cg: Option<JobGroup>,
    pub start: i64,
    pub kill_at: Option<Instant>,
    /// Every task ended; what is left in its cgroup is being killed.
    pub draining: bool,
    pub exit: Option<StepExit>,
    pub failure: Option<LaunchFailure>,
}

/// A job's cgroup on a node that runs only its steps (not its batch
/// script): made with the first step, removed when the job ends.
pub(super) struct Extern {
    pub cg: Option<JobGroup>,
    pub info: RunInfo,
    pub env: BTreeMap<String, String>,
    pub ending: bool,
}

/// A step's cgroup directory on one node (`0@node002`): an agent that
/// presents several nodes runs each node's part in one of its own.
fn step_dir(step: u32, node: &str) -> String {
    let node: String = node.chars().map(|c| if c.is_ascii_alphanumeric() || "._-".contains(c) { c } else { '_' }).collect();
    format!("{step}@{node}")
}

/// `#!/bin/sh` running `argv`, each word quoted.
fn exec_script(argv: &[String]) -> String {
    let words: Vec<String> = argv.iter().map(|w| format!("'{}'", w.replace('\'', "'\\''"))).collect();
    format!("#!/bin/sh\nexec {}\n", words.join(" "))
}

impl Agent {
    /// Start this node's part of a step.
    pub(super) fn step(&mut self, s: &StepLaunch) {
        let key = (s.job, s.attempt, s.step, s.share.node.clone());
        if self.steps.contains_key(&key) {
            return;
        }
        let mut env = s.env.clone();
        let mut info = RunInfo { start: unix_now(), limit_s: None, grace_s: s.kill_grace_s, cgroup: false, node: s.share.node.clone(), cpus: Vec::new(), gpus: Vec::new(), tstp: false, task: None, cg_name: String::new(), oom_base: 0 };
        // the job's cgroup on the node: its batch script's, or one of its own
        let job_cg: std::io::Result<Option<JobGroup>> = match (self.jobs.get(&(s.job, s.attempt)), self.externs.get(&(s.job, s.attempt))) {
            (Some(j), _) => {
                info.cpus = j.info.cpus.clone();
                info.gpus = j.info.gpus.clone();
                info.cgroup = j.info.cgroup;
                info.cg_name = j.info.cg_name.clone();
                Ok(j.cg.clone())
            }
            (None, Some(x)) => {
                info.cpus = x.info.cpus.clone();
                info.gpus = x.info.gpus.clone();
                info.cgroup = x.info.cgroup;
                info.cg_name = x.info.cg_name.clone();
                env.extend(x.env.clone());
                Ok(x.cg.clone())
            }
            (None, None) => {
                let mut gpu_env = BTreeMap::new();
                let r = self.confine_job(s.job, s.attempt, Some(s.share.clone()), &mut gpu_env, &mut info, None);
                if r.is_ok() {
                    env.extend(gpu_env.clone());
                    self.hold(&info, 1);
                    self.externs.insert((s.job, s.attempt), Extern { cg: r.as_ref().ok().cloned().flatten(), info: info.clone(), env: gpu_env, ending: false });
                }
                r
            }
        };
        let step_name = step_dir(s.step, &s.share.node);
        let made = job_cg.and_then(|cg| match cg {
            Some(cg) => cg.create_step(&step_name).map(|enter| (Some(cg.step(&step_name)), enter)),
            None => Ok((None, Vec::new())),
        });
        let mut run = StepRun { node: s.share.node.clone(), tasks: Vec::new(), cg: None, start: unix_now(), kill_at: None, draining: false, exit: None, failure: None };
        let (cg, enter) = match made {
            Ok(x) => x,
            Err(e) => {
                tracing::warn!(job = s.job, step = s.step, "cannot make the step's cgroup: {e}");
                run.failure = Some(LaunchFailure { stage: LaunchStage::Cgroup, errno: e.raw_os_error().unwrap_or(libc::EIO) });
                run.tasks = s.tasks.iter().map(|&procid| Task { procid, slot: Slot::new(&self.cfg.state_dir, u32::MAX), owner: 0, pids: None, ours: true, exit: Some((Some(1), None)) }).collect();
                self.steps.insert(key, run);
                return;
            }
        };
        run.cg = cg;
        // the client's first address this node reaches
        let addr = s.io.addrs.iter().find_map(|a| {
            let sa = std::net::SocketAddr::new(a.parse().ok()?, s.io.port);
            std::net::TcpStream::connect_timeout(&sa, Duration::from_secs(2)).ok().map(|_| sa)
        });
        let Some(addr) = addr else {
            tracing::warn!(job = s.job, step = s.step, addrs = ?s.io.addrs, "cannot reach the step's client");
            run.failure = Some(LaunchFailure { stage: LaunchStage::Io, errno: libc::EHOSTUNREACH });
            run.tasks = s.tasks.iter().map(|&procid| Task { procid, slot: Slot::new(&self.cfg.state_dir, u32::MAX), owner: 0, pids: None, ours: true, exit: Some((Some(1), None)) }).collect();
            self.steps.insert(key, run);
            return;
        };
        let per_task = s.cpus_per_task as usize;
        for (local, &procid) in s.tasks.iter().enumerate() {
            let mut tenv = env.clone();
            let vars = [("PROCID", procid.to_string()), ("LOCALID", local.to_string()), ("NODEID", s.nodeid.to_string()), ("TASK_PID", String::new())];
            for prefix in ["SLURM_", "TESSERA_"] {
                for (k, v) in vars.iter().filter(|(_, v)| !v.is_empty()) {
                    tenv.insert(format!("{prefix}{k}"), v.clone());
                }
            }
            tenv.insert("SLURMD_NODENAME".into(), s.share.node.clone());
            tenv.insert("TESSERA_NODENAME".into(), s.share.node.clone());
            // PMI-1 (MPICH's simple PMI): the client's server, this task's rank
            tenv.insert("PMI_RANK".into(), procid.to_string());
            tenv.insert("PMI_ID".into(), procid.to_string());
            tenv.insert("PMI_SIZE".into(), s.ntasks.to_string());
            if let Some(p) = s.io.pmi_port {
                tenv.insert("PMI_PORT".into(), std::net::SocketAddr::new(addr.ip(), p).to_string());
            }
            // bound to its share of the job's cpus here
            let affinity = if info.cpus.len() >= (local + 1) * per_task { info.cpus[local * per_task..(local + 1) * per_task].to_vec() } else { info.cpus.clone() };
            let l = Launch {
                job: s.job,
                attempt: s.attempt,
                name: s.name.clone(),
                user: s.user.clone(),
                uid: s.uid,
                gid: s.gid,
                script: exec_script(&s.argv),
                workdir: s.workdir.clone(),
                stdout: "/dev/null".into(),
                stderr: "/dev/null".into(),
                env: tenv,
                limit_s: None,
                kill_grace_s: s.kill_grace_s,
                shares: vec![s.share.clone()],
                suspend_tstp: false,
                io: Some(TaskIo { addr: addr.to_string(), key: s.io.key.clone(), task: procid }),
                affinity,
            };
            let owner = launch::runs_as(&l);
            let slot = self.spool.take(owner, &self.cfg.state_dir);
            let tinfo = RunInfo { task: Some((s.step, procid)), ..info.clone() };
            let r = self.launcher.spawn(&slot, &serde_json::to_string(&tinfo).expect("serializes"), &l, &enter);
            let mut t = Task { procid, slot, owner, pids: None, ours: true, exit: None };
            match r {
                Ok(p) => t.pids = Some(p),
                Err(e) => {
                    tracing::warn!(job = s.job, step = s.step, task = procid, "cannot start the task: {e}");
                    let _ = t.slot.append_exit(s.job, s.attempt, 1, -1, unix_now(), Some(e.failure));
                    run.failure.get_or_insert(e.failure);
                    t.exit = Some((Some(1), None));
                }
            }
            run.tasks.push(t);
        }
        tracing::info!(job = s.job, step = s.step, tasks = s.tasks.len(), "step started");
        self.steps.insert(key, run);
    }

    /// A task's shepherd was reaped (true if it was one of a step's).
    pub(super) fn task_reaped(&mut self, pid: i32) -> bool {
        for ((job, attempt, _, _), run) in self.steps.iter_mut() {
            let (job, attempt) = (*job, *attempt);
            for t in run.tasks.iter_mut().filter(|t| t.ours && t.exit.is_none() && t.pids.is_some_and(|p| p.shepherd == pid)) {
                t.exit = Some(task_exit(&t.slot, job, attempt));
                return true;
            }
        }
        false
    }

    /// Steps' timers: adopted tasks' ends, kills after the grace period,
    /// and a step whose tasks all ended, settled once its cgroup is empty.
    pub(super) fn step_timers(&mut self) {
        let now = Instant::now();
        for ((job, attempt, step, _), run) in self.steps.iter_mut() {
            let (job, attempt, step) = (*job, *attempt, *step);
            if run.exit.is_some() {
                continue;
            }
            for t in run.tasks.iter_mut().filter(|t| !t.ours && t.exit.is_none()) {
                if t.slot.read().exit.is_some() || t.pids.is_none_or(|p| !alive(p.shepherd)) {
                    t.exit = Some(task_exit(&t.slot, job, attempt));
                }
            }
            if run.kill_at.is_some_and(|t| t <= now) {
                run.kill_at = None;
                run.kill(libc::SIGKILL);
            }
            if run.tasks.iter().any(|t| t.exit.is_none()) {
                continue;
            }
            if let Some(cg) = &run.cg {
                if !cg.empty() {
                    if !run.draining {
                        run.draining = true;
                        cg.kill();
                    }
                    continue;
                }
            }
            let usage = run.cg.as_ref().map(|cg| cg.usage(None));
            if let Some(cg) = &run.cg {
                cg.remove();
            }
            run.exit = Some(StepExit {
                job,
                attempt,
                step,
                node: run.node.clone(),
                tasks: run.tasks.iter().map(|t| (t.procid, t.exit.and_then(|e| e.0), t.exit.and_then(|e| e.1))).collect(),
                start: run.start,
                end: unix_now(),
                usage,
                failure: run.failure,
            });
            tracing::info!(job, step, node = %run.node, "step ended on the node");
        }
        // a job's own cgroup on a node of its steps only, once the job ended
        // and its steps here have
        let done: Vec<(u64, u32)> = self.externs.iter().filter(|(k, x)| x.ending && !self.steps.iter().any(|(s, r)| (s.0, s.1) == **k && r.exit.is_none())).map(|(k, _)| *k).collect();
        for k in done {
            let Some(x) = self.externs.remove(&k) else { continue };
            if let Some(cg) = &x.cg {
                cg.kill();
                cg.remove();
            }
            self.hold(&x.info, -1);
        }
    }

    /// The job ended (or is killed): its steps here are ended, SIGTERM then
    /// SIGKILL after the grace period, and its own cgroup here goes with them.
    pub(super) fn kill_steps(&mut self, job: u64, attempt: u32, grace_s: u64) {
        for (_, run) in self.steps.iter_mut().filter(|(k, r)| k.0 == job && k.1 == attempt && r.exit.is_none() && r.kill_at.is_none()) {
            run.kill(libc::SIGTERM);
            run.kill_at = Some(Instant::now() + Duration::from_secs(grace_s));
        }
        if let Some(x) = self.externs.get_mut(&(job, attempt)) {
            x.ending = true;
        }
    }

    /// The job is suspended (or resumed): its steps' tasks here are frozen
    /// (thawed, and continued), their own cgroups as the job's.
    pub(super) fn stop_steps(&mut self, job: u64, attempt: u32, stop: bool) {
        for (_, run) in self.steps.iter().filter(|(k, r)| k.0 == job && k.1 == attempt && r.exit.is_none()) {
            match (&run.cg, stop) {
                (Some(cg), s) => {
                    if let Err(e) = cg.freeze(s) {
                        tracing::warn!(job, "freezing a step: {e}");
                    }
                    if !s {
                        cg.signal(libc::SIGCONT);
                    }
                }
                (None, true) => run.kill(libc::SIGSTOP),
                (None, false) => run.kill(libc::SIGCONT),
            }
        }
    }

    pub(super) fn signal_step(&mut self, job: u64, attempt: u32, step: u32, signal: i32) {
        for (_, run) in self.steps.iter().filter(|(k, r)| (k.0, k.1, k.2) == (job, attempt, step) && r.exit.is_none()) {
            tracing::info!(job, step, signal, node = %run.node, "signal to a step");
            run.kill(signal);
        }
    }

    /// Forget the steps whose end the controller acknowledged.
    pub(super) fn forget_steps(&mut self, acked: &[StepExit]) {
        for x in acked {
            if let Some(run) = self.steps.remove(&(x.job, x.attempt, x.step, x.node.clone())) {
                for t in run.tasks.iter().filter(|t| t.slot.n != u32::MAX) {
                    t.slot.free(x.job, x.attempt);
                    self.spool.give_back(&t.slot, t.owner);
                }
            }
        }
    }

    /// A task re-adopted from the spool (its run line names its step).
    pub(super) fn adopt_task(&mut self, job: u64, attempt: u32, slot: Slot, owner: u32, info: RunInfo, pids: Option<Spawned>) {
        let Some((step, procid)) = info.task else { return };
        let cg = match (&self.cfg.cgroups, info.cgroup) {
            (Some(h), true) if !info.cg_name.is_empty() => Some(h.named(&info.cg_name)),
            (Some(h), true) => Some(h.job(job, attempt)),
            _ => None,
        };
        if let (Some(cg), false) = (&cg, self.jobs.contains_key(&(job, attempt))) {
            self.externs.entry((job, attempt)).or_insert_with(|| Extern { cg: Some(cg.clone()), info: info.clone(), env: BTreeMap::new(), ending: false });
        }
        let run = self.steps.entry((job, attempt, step, info.node.clone())).or_insert_with(|| StepRun {
            node: info.node.clone(),
            tasks: Vec::new(),
            cg: cg.map(|c| c.step(&step_dir(step, &info.node))),
            start: info.start,
            kill_at: None,
            draining: false,
            exit: None,
            failure: None,
        });
        let exit = slot.read().exit.map(|x| (x.code, x.signal));
        run.tasks.push(Task { procid, slot, owner, pids, ours: false, exit });
    }
}

impl StepRun {
    /// Send `sig` to its processes: every one in its cgroup, or each task's
    /// process group.
    fn kill(&self, sig: i32) {
        match &self.cg {
            Some(cg) if sig == libc::SIGKILL => cg.kill(),
            Some(cg) => cg.signal(sig),
            None => {
                for p in self.tasks.iter().filter(|t| t.exit.is_none()).filter_map(|t| t.pids) {
                    // SAFETY: a plain system call.
                    unsafe { libc::kill(-p.pgid, sig) };
                }
            }
        }
    }
}

/// How a task ended, from its record (a vanished shepherd: killed).
fn task_exit(slot: &Slot, job: u64, attempt: u32) -> (Option<i32>, Option<i32>) {
    match slot.read().exit {
        Some(x) => (x.code, x.signal),
        None => {
            let _ = slot.append_exit(job, attempt, -1, 9, unix_now(), None);
            (None, Some(9))
        }
    }
}
