//! The engine's sharing state: the accounts, each association's decayed
//! usage, the Fair Tree at the last calculation, and each queued job's
//! priority and factors.
//!
//! Calculations happen at multiples of the calculation period (Slurm's
//! PriorityCalcPeriod): at the first input at or after one, usage decays to
//! that instant, running jobs are charged up to it, Fair Tree runs and every
//! queued job's priority is computed again, as of that instant. A job's
//! priority is set at submission too; between calculations it does not change,
//! so the queue only has to be put in order again after a calculation or an
//! arrival that belongs before the tail. Usage is charged at each calculation
//! for the seconds a job ran since the last one, and at its end for the rest:
//! seconds × decay over them (Slurm's `run_delta × decay^run_delta`) × its
//! rate (cores, normalized cores or canonical units held) × its QOS's usage
//! factor, to its user association.

use super::accounts::{Accounts, Ticket};
use super::fairtree::{fair_tree, FsRow};
use super::priority::{Factors, PriorityConfig, PriorityKind};
use crate::cluster::{CanonicalUnit, Cluster};
use crate::job::JobIdx;
use crate::Time;
use serde::{Deserialize, Serialize};

/// What the priority of a job depends on besides its ticket and age: the
/// machine's size and each partition's job factor, tier and canonical unit.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub(crate) struct MachineFacts {
    pub cores: u64,
    pub nodes: u64,
    /// By partition: PriorityJobFactor over the largest.
    pub part_factor: Vec<f64>,
    pub tier: Vec<u32>,
    pub unit: Vec<CanonicalUnit>,
}

impl MachineFacts {
    pub fn of(c: &Cluster) -> MachineFacts {
        let max = c.partitions.iter().map(|p| p.priority_job_factor).max().unwrap_or(0);
        MachineFacts {
            cores: c.nodes.iter().map(|n| n.cores as u64).sum(),
            nodes: c.nodes.len() as u64,
            part_factor: c.partitions.iter().map(|p| if max == 0 { 0.0 } else { p.priority_job_factor as f64 / max as f64 }).collect(),
            tier: c.partitions.iter().map(|p| p.priority_tier).collect(),
            unit: c.partitions.iter().map(|p| p.canonical_unit).collect(),
        }
    }
}

/// A job's place in a priority-ordered queue: higher tier, then higher
/// priority, then earlier submission, then lower id.
pub(crate) type Key = (std::cmp::Reverse<u32>, std::cmp::Reverse<u32>, Time, u64);

#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub(crate) struct JobShare {
    /// Its factors and priority as last computed (queued jobs).
    pub factors: Option<Factors>,
    /// Seconds of its run already charged.
    pub charged: Time,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub(crate) struct Sharing {
    pub accounts: Accounts,
    pub cfg: PriorityConfig,
    pub facts: MachineFacts,
    /// By association: usage charged to it (user associations only).
    pub usage: Vec<f64>,
    /// Fair Tree at the last calculation.
    pub rows: Vec<FsRow>,
    /// The instant of the last calculation.
    pub last_calc: Option<Time>,
    /// By job slot.
    pub jobs: Vec<JobShare>,
    /// No queued job's key is after this one (None: empty so far).
    pub tail: Option<Key>,
    /// The queue must be put in priority order before the next pass.
    pub unsorted: bool,
}

impl Sharing {
    pub fn new(accounts: Accounts, cfg: PriorityConfig, facts: MachineFacts) -> Sharing {
        let usage = vec![0.0; accounts.assocs.len()];
        let rows = fair_tree(&accounts, &usage);
        Sharing { accounts, cfg, facts, usage, rows, last_calc: None, jobs: Vec::new(), tail: None, unsorted: false }
    }

    pub fn ordered(&self) -> bool {
        self.cfg.kind == PriorityKind::Multifactor
    }

    pub fn slot(&mut self, j: JobIdx) -> &mut JobShare {
        if self.jobs.len() <= j.index() {
            self.jobs.resize(j.index() + 1, JobShare::default());
        }
        &mut self.jobs[j.index()]
    }

    pub fn factors(&self, j: JobIdx) -> Option<Factors> {
        self.jobs.get(j.index()).and_then(|s| s.factors)
    }

    /// The calculation instant at or before `now`.
    pub fn boundary(&self, now: Time) -> Time {
        now.div_euclid(self.cfg.calc_period) * self.cfg.calc_period
    }

    /// The next calculation after `now`.
    pub fn next_calc(&self, now: Time) -> Time {
        self.boundary(now) + self.cfg.calc_period
    }

    /// Whether a calculation is due at `now`.
    pub fn due(&self, now: Time) -> bool {
        self.last_calc.is_none_or(|l| self.boundary(now) > l)
    }

    /// Decay every association's usage to `at` (from the last calculation).
    pub fn decay_to(&mut self, at: Time) {
        if let Some(last) = self.last_calc {
            let d = self.cfg.decay(at - last);
            if d != 1.0 {
                for u in &mut self.usage {
                    *u *= d;
                }
                for r in &mut self.rows {
                    r.raw_usage *= d;
                }
            }
        }
        self.last_calc = Some(at);
    }

    /// Charge `secs` more seconds of a job's run at `rate` (units per second),
    /// decayed over them and then by `later` (the decay since they ended).
    pub fn charge(&mut self, j: JobIdx, ticket: Option<Ticket>, secs: Time, rate: f64, later: f64) {
        let s = self.slot(j);
        s.charged += secs;
        let Some(t) = ticket else { return };
        if secs <= 0 || !self.accounts.valid(&t) {
            return;
        }
        let factor = self.accounts.qos(t.qos).usage_factor;
        let d = self.cfg.decay_per_second().powf(secs as f64);
        let add = secs as f64 * d * rate * factor * later;
        self.usage[t.assoc.0 as usize] += add;
        // what sshare shows as raw usage is current; the ranks are the last
        // calculation's
        let lineage: Vec<_> = self.accounts.lineage(t.assoc).collect();
        for a in lineage {
            if let Some(r) = self.rows.get_mut(a.0 as usize) {
                r.raw_usage += add;
            }
        }
    }

    /// Fair Tree on the usage as it stands.
    pub fn recompute_tree(&mut self) {
        self.rows = fair_tree(&self.accounts, &self.usage);
    }

    /// A job's factors at `at`: eligible since `since`, `procs` processors on
    /// at least `nodes` nodes, in partition `part`.
    pub fn factors_of(&self, ticket: Option<Ticket>, at: Time, since: Time, procs: u32, nodes: u32, part: usize) -> Factors {
        let c = &self.cfg;
        let (fs, qos, nice) = match ticket.filter(|t| self.accounts.valid(t)) {
            Some(t) => {
                let max_q = self.accounts.qos.iter().map(|q| q.priority).max().unwrap_or(0);
                let q = if max_q == 0 { 0.0 } else { self.accounts.qos(t.qos).priority as f64 / max_q as f64 };
                (self.rows[t.assoc.0 as usize].fairshare, q, t.nice)
            }
            None => (0.0, 0.0, 0),
        };
        let part = self.facts.part_factor.get(part).copied().unwrap_or(0.0);
        c.combine(c.age_factor(at, since), fs, c.jobsize_factor(procs, nodes, self.facts.cores, self.facts.nodes), part, qos, nice)
    }

    /// A queued job's place in the order.
    pub fn key(&self, j: JobIdx, part: usize, submit: Time, id: u64) -> Key {
        let prio = self.factors(j).map_or(0, |f| f.priority);
        let tier = self.facts.tier.get(part).copied().unwrap_or(0);
        (std::cmp::Reverse(tier), std::cmp::Reverse(prio), submit, id)
    }

    /// A job was put at the tail of the queue with this key.
    pub fn pushed(&mut self, key: Key) {
        if self.tail.is_some_and(|t| key < t) {
            self.unsorted = true;
        }
        if self.tail.is_none_or(|t| key > t) {
            self.tail = Some(key);
        }
    }

    /// Charge rate of an allocation: units per second.
    pub fn rate(&self, parts: impl Iterator<Item = (u32, u64, u32, f64)>, part: usize) -> f64 {
        use super::priority::UsageUnit;
        let unit = self.facts.unit.get(part).copied().unwrap_or(CanonicalUnit::CPU);
        parts
            .map(|(cores, mem, gpus, factor)| match self.cfg.usage {
                UsageUnit::Raw => cores as f64,
                UsageUnit::Normalized => cores as f64 * factor,
                UsageUnit::Canonical => unit.need(cores as u64, mem, gpus as u64) as f64 * factor,
            })
            .sum()
    }
}
