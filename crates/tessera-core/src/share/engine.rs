//! Where sharing meets the engine: tickets checked at submission, priorities
//! set when a job is queued, usage charged as jobs run, the calculation at
//! each period's instant and the queue put in priority order before a pass.

use super::accounts::{Accounts, Ticket};
use super::fairtree::FsRow;
use super::priority::{Factors, PriorityConfig};
use super::state::{MachineFacts, Sharing};
use crate::cluster::Cluster;
use crate::contract::Rejection;
use crate::engine::{Engine, Machine};
use crate::job::{JobId, JobIdx, JobSpec, JobState};
use crate::Time;

/// Why an engine cannot take accounts.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SharingError {
    #[error("fair share and multifactor priority order a queue: PARM decides its own order")]
    Parm,
    #[error("accounts are set before the first job")]
    NotEmpty,
    #[error("a history seeds the usage of accounts: give the engine accounts first")]
    NoAccounts,
}

/// A job of an earlier history (a Slurm site's sacct, imported), for
/// [`Engine::with_history`]: its association, when it ran, its partition and
/// what it held on each node (cores, memory in MiB, GPUs, the node's scaling
/// factor).
#[derive(Clone, Debug, PartialEq)]
pub struct PastJob {
    pub ticket: Ticket,
    pub start: Time,
    pub end: Time,
    pub partition: usize,
    pub parts: Vec<(u32, u64, u32, f64)>,
}

/// What `sshare` and `sprio` read: the accounts, the Fair Tree at the last
/// calculation and the settings.
pub struct ShareView<'a> {
    pub accounts: &'a Accounts,
    /// Fair Tree as of the last calculation, with raw usage as it stands.
    pub rows: Vec<FsRow>,
    pub config: &'a PriorityConfig,
    /// The last calculation's instant.
    pub calculated: Option<Time>,
}

impl Engine {
    /// The engine with accounts, fair share and the priority settings (on a
    /// cluster's nodes, before any job). With [`super::PriorityKind::Fifo`]
    /// the queue keeps submission order and usage is still charged.
    pub fn with_sharing(mut self, accounts: Accounts, config: PriorityConfig, cluster: &Cluster) -> Result<Engine, SharingError> {
        if matches!(self.m, Machine::Parm(_)) {
            return Err(SharingError::Parm);
        }
        if self.t.len() > 0 {
            return Err(SharingError::NotEmpty);
        }
        self.t.limits = super::LimitBook::of(&accounts).map(Box::new);
        if let Machine::Nodes(m) = &mut self.m {
            m.set_qos_preemption(&accounts);
        }
        self.share = Some(Box::new(Sharing::new(accounts, config, MachineFacts::of(cluster))));
        Ok(self)
    }

    /// Each association's usage as a history left it at `at` (the engine's
    /// first instant; the jobs ran before it, a job still running is counted
    /// up to it), before any job: what the engine would have charged had it
    /// run them, period by period (Slurm's `run_delta × decay^run_delta` at
    /// each calculation, then decay to `at`), at the rate the priority
    /// settings charge (cores, normalized cores or canonical units) and the
    /// QOS's usage factor. Fair share then starts from the site's shares.
    pub fn with_history(mut self, jobs: &[PastJob], at: Time) -> Result<Engine, SharingError> {
        if self.t.len() > 0 {
            return Err(SharingError::NotEmpty);
        }
        let s = self.share.as_mut().ok_or(SharingError::NoAccounts)?;
        for j in jobs {
            if !s.accounts.valid(&j.ticket) {
                continue;
            }
            let rate = s.rate(j.parts.iter().copied(), j.partition) * s.accounts.qos(j.ticket.qos).usage_factor;
            let add = rate * past_charge(&s.cfg, j.start, j.end.min(at), at);
            s.seed(j.ticket.assoc.0, add);
        }
        Ok(self)
    }

    /// Submit limits refuse no job (a simulator replaying a trace: the real
    /// system accepted every job of it); limits a job could never meet still do.
    pub fn without_submit_limits(mut self) -> Engine {
        if let Some(l) = &mut self.t.limits {
            l.submit_limits = false;
        }
        self
    }

    /// Whether the engine's accounts would take a job now: a valid ticket, no
    /// submit limit reached, no limit it could never meet (what
    /// `Input::Submit` checks besides the job's fit).
    pub fn would_accept(&self, spec: &JobSpec) -> Result<(), Rejection> {
        self.share_vet(spec)?;
        if let (Some(l), Some(ticket)) = (&self.t.limits, spec.ticket) {
            l.admit(&ticket, spec.procs, spec.mem_per_proc_mb, spec.estimate).map_err(|reason| Rejection::OverLimit { job: spec.id, reason })?;
        }
        Ok(())
    }

    /// The accounts, Fair Tree and settings, if the engine has accounts.
    pub fn shares(&self) -> Option<ShareView<'_>> {
        self.share.as_ref().map(|s| ShareView { accounts: &s.accounts, rows: s.view(), config: &s.cfg, calculated: s.last_calc })
    }

    /// A queued job's priority factors as last computed: as of the last
    /// calculation, or of its submission if later.
    pub fn priority_factors(&self, id: JobId) -> Option<Factors> {
        let j = self.t.lookup(id)?;
        let s = self.share.as_ref()?;
        let Machine::Nodes(m) = &self.m else { return None };
        let e = self.t.get(j);
        if !e.state.queued() {
            return None;
        }
        let since = e.spec.begin.map_or(e.submit, |b| b.max(e.submit));
        let at = s.tree_at.map_or(e.submit, |c| c.max(e.submit));
        Some(s.factors_of(e.spec.ticket, at, since, e.spec.procs, e.spec.shape.nodes, m.part_of(j)))
    }

    /// With accounts, a job names a valid association and QOS.
    pub(crate) fn share_vet(&self, spec: &JobSpec) -> Result<(), Rejection> {
        let Some(s) = &self.share else { return Ok(()) };
        match spec.ticket {
            Some(t) if s.accounts.valid(&t) => Ok(()),
            t => Err(Rejection::InvalidSpec {
                job: spec.id,
                field: "ticket",
                value: t.map_or("none".into(), |t| format!("association {}, QOS {}", t.assoc.0, t.qos.0)),
                expected: "a user association and a QOS of the engine's accounts",
            }),
        }
    }

    /// A job was put at the tail of the queue (submitted or requeued): its
    /// priority now, and whether the queue is still in order.
    pub(crate) fn share_queued(&mut self, now: Time, j: JobIdx) {
        let Some(s) = &mut self.share else { return };
        let Machine::Nodes(m) = &self.m else { return };
        let e = self.t.get(j);
        let part = m.part_of(j);
        let since = e.spec.begin.map_or(e.submit, |b| b.max(e.submit));
        let f = s.factors_of(e.spec.ticket, now, since, e.spec.procs, e.spec.shape.nodes, part);
        let key = s.key_of(f.priority, part, e.submit, e.spec.id.0);
        let (fixed, assoc) = s.fixed_of(e.spec.ticket, e.spec.procs, e.spec.shape.nodes, part);
        *s.slot(j) = super::state::JobShare { key, charged: 0, fixed, assoc, since, rate: f64::NAN, epoch: s.epoch, joined: None };
        let (ticket, first, procs, mem, est) = (e.spec.ticket, e.requeues == 0, e.spec.procs, e.spec.mem_per_proc_mb, e.spec.estimate);
        if let (Some(l), Some(t), true) = (&mut self.t.limits, ticket, first) {
            l.queued(j, &t, procs, mem, est);
        }
        // an ordered queue stays so: the job moves from the tail to its place
        // (a queue waiting to be put in order is left for the pass that does)
        if s.ordered() && s.stale {
            s.unsorted = true;
        } else if s.ordered() && !s.unsorted && !s.at_tail(key) {
            // looked for from the last job of its association put in order
            let hint = assoc.and_then(|a| s.last_in.get(a as usize).copied().flatten());
            self.t.place_in_order(j, hint, |o| s.key_fresh(o) < key);
            if let Some(a) = assoc {
                let a = a as usize;
                if s.last_in.len() <= a {
                    s.last_in.resize(a + 1, None);
                }
                s.last_in[a] = Some(j);
            }
        }
    }

    /// Charge what a job ran by `at` and was not charged yet, decayed by
    /// `later` on top (it leaves its flow first).
    fn charge_to(&mut self, at: Time, j: JobIdx, later: f64) {
        let (Some(s), Machine::Nodes(m)) = (&mut self.share, &self.m) else { return };
        s.leave(j);
        let secs = ran_by(&self.t, j, at) - s.slot(j).charged;
        if secs > 0 {
            let rate = rate_of(s, m, j);
            s.charge(j, self.t.spec(j).ticket, secs, rate, later);
        }
    }

    /// Charge the running jobs at a calculation `n` periods after the last
    /// one: the first period's seconds, decayed by `later` on top, then the
    /// `n - 1` later whole periods (throughout which every job ran), each
    /// `period × decay^period`, decayed to now as `series` sums them. The
    /// jobs that ran throughout the first period are charged as their
    /// associations' flows; those the running list logged (that started,
    /// stopped or ended since) leave their flow, and the ones running are
    /// charged on their own up to its end (from their start, or the last
    /// time they were charged) and join their flow.
    fn charge_running(&mut self, first: Time, n: Time, later: f64, series: f64) {
        let (Some(s), Machine::Nodes(m), t) = (&mut self.share, &mut self.m, &self.t) else { return };
        let period = s.cfg.calc_period;
        let mut log = std::mem::take(&mut s.log);
        m.running_mut().take_log(&mut log);
        if !s.flows.on {
            s.start_flows(first - period);
            log.extend(m.running_jobs());
            m.running_mut().log_changes();
        }
        for &j in &log {
            s.leave(j);
        }
        s.charge_flows(period, later, first);
        for &j in &log {
            if s.jobs.get(j.index()).is_some_and(|js| js.joined.is_some()) || !t.entry(j).is_some_and(|e| matches!(e.state, JobState::Running { .. } | JobState::Ending { .. })) {
                continue;
            }
            let secs = ran_by(t, j, first) - s.slot(j).charged;
            let rate = rate_of(s, &*m, j);
            let ticket = t.spec(j).ticket;
            if secs > 0 {
                s.charge(j, ticket, secs, rate, later);
            }
            s.join(j, ticket, rate, first);
        }
        if n > 1 {
            s.charge_flows(period, series, first + (n - 1) * period);
        }
        log.clear();
        s.log = log;
    }

    /// Fair share's flows agree with the running jobs (debug builds check it
    /// after every call): a job that has run since the last calculation
    /// without a break is in its flow, charged up to it; one not in a flow
    /// started (or ran again) since, and the running list logged it.
    pub(crate) fn share_sanity_check(&self) {
        let (Some(s), Machine::Nodes(m)) = (&self.share, &self.m) else { return };
        if !s.flows.on {
            return;
        }
        let upto = s.flows.upto;
        for j in m.running_jobs() {
            let e = self.t.get(j);
            match s.jobs.get(j.index()).and_then(|js| js.joined.map(|jn| (js.charged, jn.at))) {
                Some((charged, at)) if e.period <= upto => {
                    assert_eq!(ran_by(&self.t, j, upto), charged + upto - at, "job {} in its flow is charged up to {upto}", e.spec.id)
                }
                Some(_) => {}
                None => assert!(e.period >= upto, "job {} runs since {} out of any flow (charged up to {upto})", e.spec.id, e.period),
            }
        }
    }

    /// A job ends or goes back to the queue: the rest of its run is charged.
    pub(crate) fn share_charge(&mut self, at: Time, j: JobIdx) {
        self.charge_to(at, j, 1.0);
    }

    /// Before a pass: jobs a limit held that may start now are let go; the
    /// calculation if one is due; then the queue in order.
    pub(crate) fn share_pass(&mut self, now: Time) {
        if self.t.limits.as_ref().is_some_and(|l| l.fell) {
            let l = self.t.limits.as_mut().expect("limits");
            l.fell = false;
            for j in l.holding() {
                let l = self.t.limits.as_mut().expect("limits");
                if l.blocks(j).is_none() {
                    l.unhold(j);
                    let closed = self.gates.closed(j);
                    self.t.set_held(j, closed);
                }
            }
        }
        let Some(s) = &mut self.share else { return };
        if s.due(now) {
            // as if calculated at every period's instant since the last one:
            // nothing has changed since (each input is followed by a pass), so
            // the running jobs ran throughout
            let at = s.boundary(now);
            let (last, period) = (s.last_calc.unwrap_or(at), s.cfg.calc_period);
            s.decay_to(at);
            let n = (at - last) / period;
            if n > 0 {
                let first = last + period;
                let (later, series) = (s.cfg.decay(at - first), s.cfg.periods_decay(n - 1));
                self.charge_running(first, n, later, series);
            }
            let Some(s) = &mut self.share else { return };
            s.calculated();
        }
        let (Some(s), Machine::Nodes(m)) = (&mut self.share, &self.m) else { return };
        if !s.ordered() {
            return;
        }
        // the order matters only to a pass that could start a job, and only
        // among two or more queued jobs: Fair Tree and the priorities wait for
        // one (as of the calculation's instant, so the schedule is the one an
        // eager calculation gives)
        if s.stale && self.t.queue.len() > 1 && m.could_start(&self.t) {
            s.refresh_tree();
            // the jobs now out of place, found where runs of one association
            // meet (most calculations find none, and work out few keys)
            let (mut out, mut runs) = (std::mem::take(&mut s.scratch), std::mem::take(&mut s.runs));
            out.clear();
            let top = s.out_of_order(&mut self.t.queue, &mut runs, &mut out);
            s.runs = runs;
            if !crate::table::JobTable::moves_pay(out.len(), self.t.queue.len()) {
                // many: every key worked out, the queue laid out again
                out.clear();
                for (pos, j) in self.t.queued() {
                    let key = s.key_now(&s.jobs[j.index()]);
                    let js = &mut s.jobs[j.index()];
                    (js.key, js.epoch) = (key, s.epoch);
                    out.push((key, pos));
                }
                s.tail = self.t.reorder_items(&mut out);
            } else {
                // few: each moved to its place among the others
                self.t.move_in_order(&out, |j| s.key_fresh(j));
                s.tail = top;
            }
            s.scratch = out;
            s.unsorted = false;
        } else if !s.stale && s.unsorted {
            let s2: &super::state::Sharing = s;
            let tail = self.t.reorder(|j, _| s2.key_now(&s2.jobs[j.index()]));
            s.tail = tail;
            s.unsorted = false;
        }
    }

    /// The next calculation, while a queued job could start once it reorders
    /// them. (Otherwise a pass then would start nothing, and the calculation
    /// waits for the next input: it is made as of its period's instant
    /// whenever it runs, so the schedule is the same.)
    pub(crate) fn share_wake(&self) -> Option<Time> {
        let s = self.share.as_ref().filter(|s| s.ordered())?;
        let Machine::Nodes(m) = &self.m else { return None };
        (self.t.queue.len() > 0 && m.could_start(&self.t)).then(|| s.next_calc(self.now))
    }

    /// The cluster changed: its size and partitions' factors with it, and so
    /// every queued job's fixed factors and place.
    pub(crate) fn share_reconfigured(&mut self, cluster: &Cluster) {
        if let Some(s) = &mut self.share {
            s.facts = MachineFacts::of(cluster);
        }
        self.share_rekey();
    }

    /// Every queued job's fixed factors, association and place worked out
    /// again, as of the last calculation (the cluster or the accounts changed).
    pub(crate) fn share_rekey(&mut self) {
        let (Some(s), Machine::Nodes(m)) = (&mut self.share, &self.m) else { return };
        for (_, j) in self.t.queued() {
            let e = self.t.get(j);
            let part = m.part_of(j);
            let (fixed, assoc) = s.fixed_of(e.spec.ticket, e.spec.procs, e.spec.shape.nodes, part);
            let slot = s.slot(j);
            slot.fixed = fixed;
            slot.assoc = assoc;
            let js = s.jobs[j.index()];
            let prio = s.priority_at(&js, s.last_calc.map_or(e.submit, |c| c.max(e.submit)));
            let (key, epoch) = (s.key_of(prio, part, e.submit, e.spec.id.0), s.epoch);
            let js = s.slot(j);
            (js.key, js.epoch) = (key, epoch);
        }
        s.unsorted = s.ordered();
        // what a job stays before may have changed
        self.t.queue.mark_all();
    }
}


/// Seconds a job has run by `at` (its current period counted to `at`).
fn ran_by(t: &crate::table::JobTable, j: JobIdx, at: Time) -> Time {
    let e = t.get(j);
    match e.state {
        JobState::Running { .. } | JobState::Ending { .. } => e.ran + (at - e.period).max(0),
        JobState::Suspended { .. } => e.ran,
        JobState::Pending | JobState::Held => 0,
    }
}

/// A running job's charge rate, worked out the first time it is needed (an
/// allocation does not change while a job holds it).
fn rate_of(s: &mut Sharing, m: &crate::nodes::NodeEngine, j: JobIdx) -> f64 {
    let mut rate = s.jobs[j.index()].rate;
    if rate.is_nan() {
        rate = s.rate(m.holdings(j), m.part_of(j));
        s.jobs[j.index()].rate = rate;
    }
    rate
}

/// What running over [start, end] charges per unit of rate, decayed to `at`,
/// as the engine charges it: at each calculation boundary the seconds since
/// the last, `secs × decay^secs`, and at the end the rest, as of the last
/// boundary; every usage then decays from there to `at`. The whole periods
/// in between sum as a geometric series.
fn past_charge(cfg: &PriorityConfig, start: Time, end: Time, at: Time) -> f64 {
    if end <= start {
        return 0.0;
    }
    let p = cfg.calc_period.max(1);
    // `to - from` seconds, charged as of the boundary `charged`
    let piece = |from: Time, to: Time, charged: Time| (to - from) as f64 * cfg.decay(to - from) * cfg.decay(at - charged);
    let first = (start.div_euclid(p) + 1) * p;
    if first >= end {
        return piece(start, end, first - p);
    }
    // the whole periods that end before the job does (a job ending on a
    // boundary ends before that calculation: completions come first)
    let n = (end - 1 - first) / p;
    let last = first + n * p;
    piece(start, first, first) + p as f64 * cfg.decay(p) * cfg.decay(at - last) * cfg.periods_decay(n) + piece(last, end, last)
}
