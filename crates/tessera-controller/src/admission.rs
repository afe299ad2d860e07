//! Admission: whether a request may become a journaled event, decided on the
//! state as it stands (pure, like [`State::apply`]): who may act on which job,
//! what a submission must satisfy (its options, its dependencies, a cluster
//! that can hold it), and which earlier submission an idempotency key names.

use crate::auth::{Identity, Role};
use crate::request;
use crate::state::{Event, State};
use crate::ApiError;
use tessera_core::{Cluster, JobId, JobState};
use tessera_proto::api::*;

/// What a user or an operator asks of a job.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum JobOp {
    Cancel,
    Hold,
    Release,
    Suspend,
    Resume,
    Requeue,
}

impl JobOp {
    pub fn parse(s: &str) -> Option<JobOp> {
        Some(match s {
            "cancel" => JobOp::Cancel,
            "hold" => JobOp::Hold,
            "release" => JobOp::Release,
            "suspend" => JobOp::Suspend,
            "resume" => JobOp::Resume,
            "requeue" => JobOp::Requeue,
            _ => return None,
        })
    }
}

impl State {
    /// The jobs an earlier submission with this one's key created (filed in the
    /// state, or in this batch, not yet applied); an error if this one is
    /// invalid, or is not the same request (409: the key names another one).
    pub fn seen(&self, cluster: &Cluster, default_limit_s: i64, who: &Identity, req: &SubmitRequest, batch: &[Event]) -> Result<Option<Vec<u64>>, ApiError> {
        let Some(key) = req.idempotency_key.as_deref() else { return Ok(None) };
        let earlier = self.keyed(who.uid, key).or_else(|| {
            batch.iter().find_map(|e| match e {
                Event::Submit { first, uid, req: r, .. } if *uid == who.uid && r.idempotency_key.as_deref() == Some(key) => {
                    Some(((*first..*first + r.array.as_ref().map_or(1, |a| a.indices.len() as u64)).collect(), request::digest(r)))
                }
                _ => None,
            })
        });
        let Some((ids, d)) = earlier else { return Ok(None) };
        let mut r = request::validate(req, &cluster, default_limit_s).map_err(ApiError::option)?;
        self.resolve_dependencies(&mut r)?;
        if request::digest(&r) != d {
            return Err(ApiError::new(409, format!("idempotency key {}: it names another submission (jobs {}…); a new submission needs a new key", tessera_core::quote::bounded(key), ids[0])));
        }
        Ok(Some(ids))
    }

    pub fn admit_submit(&self, cluster: &Cluster, default_limit_s: i64, who: &Identity, req: &SubmitRequest, first: u64) -> Result<Event, ApiError> {
        if who.role == Role::Agent {
            return Err(ApiError::new(403, "agents do not submit jobs"));
        }
        let mut r = request::validate(req, &cluster, default_limit_s).map_err(ApiError::option)?;
        self.resolve_dependencies(&mut r)?;
        for &(kind, on) in &r.dependencies {
            let option = "--dependency".to_string();
            let bad = |expected: String| ApiError::option(tessera_proto::submit::OptionError { option: option.clone(), value: format!("{}:{on}", crate::state::dependency_name(kind)), expected, line: None });
            if self.ledger.jobs.contains_key(&on) || (on >= self.ledger.next_id && on < first) {
                continue;
            }
            match self.ledger.outcomes.get(&on) {
                None => return Err(bad(format!("a job that exists or ended less than {} s ago (job {on} is not known)", crate::state::DONE_KEEP_S))),
                Some(&ok) => {
                    let never = match kind {
                        tessera_proto::submit::DependencyKind::AfterAny => false,
                        tessera_proto::submit::DependencyKind::AfterOk => !ok,
                        tessera_proto::submit::DependencyKind::AfterNotOk => ok,
                    };
                    if never {
                        return Err(bad(format!("a condition that can still hold (job {on} ended {})", if ok { "successfully" } else { "unsuccessfully" })));
                    }
                }
            }
        }
        let parm = self.engine().policy() == tessera_core::PolicyKind::Parm;
        power_options_fit(&r, parm)?;
        if r.nice < 0 && who.role != Role::Operator {
            return Err(ApiError::option(tessera_proto::submit::OptionError { option: "--nice".into(), value: r.nice.to_string(), expected: "0 or more (only an operator may raise a job's priority)".into(), line: None }));
        }
        let mut spec = r.spec(first, cluster, parm);
        spec.ticket = crate::state::ticket_of(self.engine(), &who.user, &r).map_err(ApiError::option)?;
        spec.reservation = crate::state::resv_of(self.engine(), &who.user, &r, spec.ticket).map_err(ApiError::option)?;
        if let Err(e) = self.engine().would_accept(&spec) {
            let (option, value) = match (&r.account, &r.qos) {
                (_, Some(q)) if matches!(e, tessera_core::Rejection::OverLimit { reason, .. } if reason.name().starts_with("QOS")) => ("--qos", q.clone()),
                (Some(a), _) => ("--account", a.clone()),
                _ => ("--account", format!("(the default of user {})", who.user)),
            };
            let why = match e {
                tessera_core::Rejection::OverLimit { reason, .. } => format!("a job within the limits of its association and QOS (it violates {reason})"),
                other => other.to_string(),
            };
            return Err(ApiError::option(tessera_proto::submit::OptionError { option: option.into(), value, expected: why, line: None }));
        }
        let nodeset = r.nodeset.as_deref().map(|s| tessera_core::NodeSetSpec::parse_job(s).expect("validated at submit"));
        {
            if let Err(e) = self.engine().can_run_with(&spec, nodeset.as_ref(), &r.choice(cluster)) {
                // the request is no job yet: its options are named, not an id
                let why = match e {
                    tessera_core::Rejection::NeverFits { why, .. } => why.to_string(),
                    tessera_core::Rejection::InvalidSpec { field, value, expected, .. } => format!("{field} is {value}: expected {expected}"),
                    other => other.to_string(),
                };
                let part = &cluster.partitions[r.partition as usize].name;
                return Err(ApiError::option(tessera_proto::submit::OptionError {
                    option: "--ntasks, --mem-per-cpu, --gpus-per-node".into(),
                    value: format!("-n {} --mem-per-cpu {}M --gpus-per-node {}", r.procs, r.mem_per_proc_mb, r.gpus_per_node),
                    expected: format!("a request that the nodes of partition {part} of cluster {} can hold together ({why})", cluster.name),
                    line: None,
                }));
            }
        }
        Ok(Event::Submit { first, user: who.user.clone(), uid: who.uid, gid: who.gid, req: Box::new(r) })
    }

    /// A live job's script and environment: its owner's and the operators'
    /// (they hold what users export: tokens, passwords).
    pub fn script(&self, who: &Identity, job: u64) -> Result<JobScript, ApiError> {
        let m = self.owned(who, job, true)?;
        Ok(JobScript { id: job, script: m.req.script.clone(), env: m.req.env.clone() })
    }

    /// Live job `job`, if `who` may act on it (`script`: read its script and
    /// environment): its owner or an operator, never an agent.
    fn owned(&self, who: &Identity, job: u64, script: bool) -> Result<&crate::state::JobMeta, ApiError> {
        if who.role == Role::Agent {
            return Err(ApiError::new(403, if script { "agents read scripts only in their launches" } else { "agents do not act on jobs" }));
        }
        let Some(m) = self.ledger.jobs.get(&job) else {
            return Err(match self.ledger.done.get(&job) {
                Some(d) if script => ApiError::new(404, format!("job {job} has ended ({}): its script is kept only while it is queued or running", d.info.state.name())),
                Some(d) => ApiError::new(409, format!("job {job} has already ended ({})", d.info.state.name())),
                None => ApiError::new(404, format!("no job {job}")),
            });
        };
        if who.role != Role::Operator && m.uid != who.uid {
            return Err(ApiError::new(
                403,
                if script {
                    format!("job {job} belongs to {}: its script and environment are shown to its owner and the operators only", m.user)
                } else {
                    format!("job {job} belongs to {}; {} may act only on their own jobs", m.user, who.user)
                },
            ));
        }
        Ok(m)
    }

    pub fn admit_op(&self, who: &Identity, job: u64, op: JobOp) -> Result<Event, ApiError> {
        self.owned(who, job, false)?;
        if matches!(op, JobOp::Suspend | JobOp::Resume) && who.role != Role::Operator {
            return Err(ApiError::new(403, "only operators suspend and resume jobs (as with scontrol)"));
        }
        let st = self.engine().job(JobId(job)).map(|(_, s)| s).expect("a live job is in the engine");
        let ok = match op {
            JobOp::Cancel => !matches!(st, JobState::Ending { .. }),
            JobOp::Hold => st.queued(),
            JobOp::Release => self.engine().pending_reason(self.ledger.now, JobId(job)) == Some(tessera_core::PendingReason::Held),
            JobOp::Suspend => matches!(st, JobState::Running { .. }),
            JobOp::Resume => matches!(st, JobState::Suspended { by: tessera_core::SuspendedBy::Operator, .. }),
            JobOp::Requeue => matches!(st, JobState::Running { .. } | JobState::Suspended { .. }),
        };
        if !ok {
            return Err(ApiError::new(409, format!("job {job} is {}: cannot {op:?}", st.name()).to_lowercase()));
        }
        Ok(match op {
            JobOp::Cancel => Event::Cancel(job),
            JobOp::Hold => Event::Hold(job),
            JobOp::Release => Event::Release(job),
            JobOp::Suspend => Event::Suspend(job),
            JobOp::Resume => Event::Resume(job),
            JobOp::Requeue => Event::Requeue(job),
        })
    }
}

impl State {
    /// A step of running job `job` (its owner's or an operator's), laid out
    /// on the job's nodes; `batch` holds the steps this batch admitted
    /// already (each takes the next number).
    pub fn admit_step(&self, who: &Identity, job: u64, req: &tessera_proto::api::StepRequest, batch: &[Event]) -> Result<Event, ApiError> {
        self.owned(who, job, false)?;
        let bad = |field: &str, v: String, expected: &str| ApiError::new(400, format!("field `{field}`: {v}: expected {expected}"));
        if req.argv.is_empty() || req.argv.iter().any(|a| a.contains('\0')) || req.argv.len() > 4096 {
            return Err(bad("argv", format!("{} words", req.argv.len()), "a command of 1 to 4096 words without NUL bytes"));
        }
        if !req.workdir.starts_with('/') || req.workdir.contains('\0') {
            return Err(bad("workdir", tessera_core::quote::bounded(&req.workdir), "an absolute path"));
        }
        if req.env.len() > 4096 || req.env.iter().any(|(k, v)| k.is_empty() || k.contains(['=', '\0']) || v.contains('\0')) {
            return Err(bad("env", format!("{} variables", req.env.len()), "at most 4096 variables, names without `=` and no NUL bytes"));
        }
        if req.io.addrs.is_empty() || req.io.addrs.len() > 16 || req.io.addrs.iter().any(|a| a.parse::<std::net::IpAddr>().is_err()) || req.io.key.len() > 128 {
            return Err(bad("io", format!("{} addresses", req.io.addrs.len()), "1 to 16 IP addresses and a key of at most 128 bytes"));
        }
        let (st, m) = (self.engine().job(JobId(job)).map(|(_, s)| s), &self.ledger.jobs[&job]);
        if !matches!(st, Some(JobState::Running { .. })) {
            return Err(ApiError::new(409, format!("job {job} is {}: a step runs in a running job", st.map_or("gone", |s| s.name())).to_lowercase()));
        }
        let alloc = self.engine().allocation(JobId(job)).expect("a running job has an allocation");
        let cores: Vec<u32> = alloc.parts.iter().map(|p| p.cores).collect();
        let counts = crate::steps::layout(&cores, req.ntasks, req.nodes, req.cpus_per_task, req.ntasks_per_node).map_err(|e| ApiError::new(400, format!("job {job}: {e}")))?;
        let earlier = batch.iter().filter(|e| matches!(e, Event::StepStart(s) if s.0 == job)).count() as u32;
        let mut req = req.clone();
        if req.name.is_empty() {
            req.name = req.argv[0].rsplit('/').next().unwrap_or("step").to_string();
        }
        let meta = crate::steps::StepMeta {
            id: m.steps.len() as u32 + earlier,
            req: Box::new(req),
            nodes: m.nodes[..counts.len()].to_vec(),
            ended: vec![None; counts.len()],
            tasks_per_node: counts,
            start: self.ledger.now,
            signalled: None,
            cut: None,
        };
        Ok(Event::StepStart(Box::new((job, m.attempt, meta))))
    }

    /// The end of an allocation without a batch script, from its client.
    pub fn admit_end(&self, who: &Identity, job: u64, code: i32) -> Result<Event, ApiError> {
        self.owned(who, job, false)?;
        let m = &self.ledger.jobs[&job];
        if !m.req.no_shell {
            return Err(ApiError::new(409, format!("job {job} runs a batch script: it ends when the script does")));
        }
        match self.engine().job(JobId(job)).map(|(_, s)| s) {
            Some(JobState::Running { .. }) => Ok(Event::End { job, attempt: m.attempt, code }),
            st => Err(ApiError::new(409, format!("job {job} is {}: only a running allocation ends so", st.map_or("gone", |s| s.name())).to_lowercase())),
        }
    }

    /// A signal for a running step, from its client.
    pub fn admit_step_signal(&self, who: &Identity, job: u64, step: u32, signal: i32) -> Result<Event, ApiError> {
        self.owned(who, job, false)?;
        let m = &self.ledger.jobs[&job];
        if !(1..=64).contains(&signal) {
            return Err(ApiError::new(400, format!("field `signal`: {signal}: expected a signal number from 1 to 64")));
        }
        match m.steps.get(step as usize) {
            Some(s) if s.end().is_none() => Ok(Event::StepSignal { job, attempt: m.attempt, step, signal }),
            Some(_) => Err(ApiError::new(409, format!("step {job}.{step} has ended"))),
            None => Err(ApiError::new(404, format!("job {job} has no step {step}"))),
        }
    }
}

/// The power options are the power-aware policy's: another policy refuses
/// them, and PARM needs a time estimate (the PASS model scales it).
fn power_options_fit(r: &request::JobRequest, parm: bool) -> Result<(), ApiError> {
    let bad = |option: &str, value: String, expected: &str| ApiError::option(tessera_proto::submit::OptionError { option: option.into(), value, expected: expected.into(), line: None });
    match (&r.power, parm) {
        (Some(p), false) => Err(bad(
            "--moldable, --malleable, --power-profile",
            format!("{}-{} nodes, profile {}", p.n_min, p.n_max, p.profile),
            "to be left out: the controller's policy is not power-aware (start it with --policy parm)",
        )),
        (_, true) if r.unlimited => Err(bad("--time", "UNLIMITED".into(), "a run time estimate (the power-aware policy scales a job's time at its largest size and full power to every size and cap)")),
        _ => Ok(()),
    }
}
