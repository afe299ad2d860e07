//! Where sharing meets the engine: tickets checked at submission, priorities
//! set when a job is queued, usage charged as jobs run, the calculation at
//! each period's instant and the queue put in priority order before a pass.

use super::accounts::Accounts;
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
}

/// What `sshare` and `sprio` read: the accounts, the Fair Tree at the last
/// calculation and the settings.
pub struct ShareView<'a> {
    pub accounts: &'a Accounts,
    pub rows: &'a [FsRow],
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
        self.share = Some(Box::new(Sharing::new(accounts, config, MachineFacts::of(cluster))));
        Ok(self)
    }

    /// The accounts, Fair Tree and settings, if the engine has accounts.
    pub fn shares(&self) -> Option<ShareView<'_>> {
        self.share.as_ref().map(|s| ShareView { accounts: &s.accounts, rows: &s.rows, config: &s.cfg, calculated: s.last_calc })
    }

    /// A queued job's priority factors as last computed.
    pub fn priority_factors(&self, id: JobId) -> Option<Factors> {
        let j = self.t.lookup(id)?;
        self.share.as_ref()?.factors(j).filter(|_| self.t.state(j).queued())
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
        *s.slot(j) = super::state::JobShare { factors: Some(f), charged: 0 };
        if s.ordered() {
            let key = s.key(j, part, e.submit, e.spec.id.0);
            s.pushed(key);
        }
    }

    /// Seconds a job has run by `at` (its current period counted to `at`).
    fn ran_by(&self, j: JobIdx, at: Time) -> Time {
        let e = self.t.get(j);
        match e.state {
            JobState::Running { .. } | JobState::Ending { .. } => e.ran + (at - e.period).max(0),
            JobState::Suspended { .. } => e.ran,
            JobState::Pending | JobState::Held => 0,
        }
    }

    /// Charge what a job ran by `at` and was not charged yet, decayed by
    /// `later` on top.
    fn charge_to(&mut self, at: Time, j: JobIdx, later: f64) {
        if self.share.is_none() {
            return;
        }
        let ran = self.ran_by(j, at);
        let (Some(s), Machine::Nodes(m)) = (&mut self.share, &self.m) else { return };
        let secs = ran - s.slot(j).charged;
        if secs > 0 {
            let rate = s.rate(m.holdings(j), m.part_of(j));
            s.charge(j, self.t.spec(j).ticket, secs, rate, later);
        }
    }

    /// A job ends or goes back to the queue: the rest of its run is charged.
    pub(crate) fn share_charge(&mut self, at: Time, j: JobIdx) {
        self.charge_to(at, j, 1.0);
    }

    /// Before a pass: the calculation if one is due, then the queue in order.
    pub(crate) fn share_pass(&mut self, now: Time) {
        let Some(s) = &mut self.share else { return };
        if s.due(now) {
            // as if calculated at every period's instant since the last one:
            // nothing has changed since (each input is followed by a pass), so
            // the running jobs ran throughout
            let at = s.boundary(now);
            let (last, period) = (s.last_calc.unwrap_or(at), s.cfg.calc_period);
            s.decay_to(at);
            let running: Vec<JobIdx> = self.t.live().filter(|&j| !self.t.state(j).queued()).collect();
            for j in running {
                let mut b = last;
                while b < at {
                    b += period;
                    let later = self.share.as_ref().map_or(1.0, |s| s.cfg.decay(at - b));
                    self.charge_to(b, j, later);
                }
            }
            let Some(s) = &mut self.share else { return };
            let Machine::Nodes(m) = &self.m else { return };
            s.recompute_tree();
            for (_, j) in self.t.queued() {
                let e = self.t.get(j);
                let since = e.spec.begin.map_or(e.submit, |b| b.max(e.submit));
                let f = s.factors_of(e.spec.ticket, at, since, e.spec.procs, e.spec.shape.nodes, m.part_of(j));
                s.slot(j).factors = Some(f);
            }
            s.unsorted = s.ordered();
        }
        let (Some(s), Machine::Nodes(m)) = (&mut self.share, &self.m) else { return };
        if s.unsorted {
            s.tail = self.t.reorder(|j, e| s.key(j, m.part_of(j), e.submit, e.spec.id.0));
            s.unsorted = false;
        }
    }

    /// The next calculation, while jobs wait for it to reorder them.
    pub(crate) fn share_wake(&self) -> Option<Time> {
        let s = self.share.as_ref().filter(|s| s.ordered())?;
        (self.t.queue.len() > 0).then(|| s.next_calc(self.now))
    }

    /// The cluster changed: its size and partitions' factors with it.
    pub(crate) fn share_reconfigured(&mut self, cluster: &Cluster) {
        if let Some(s) = &mut self.share {
            s.facts = MachineFacts::of(cluster);
            s.unsorted = s.ordered();
        }
    }
}
