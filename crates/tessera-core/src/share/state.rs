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
use super::fairtree::{fair_tree_into, FsRow, Shape};
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

fn nan() -> f64 {
    f64::NAN
}

fn is_nan(x: &f64) -> bool {
    x.is_nan()
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub(crate) struct JobShare {
    /// Its place in the order (tier, priority, submission, id), as of the last
    /// calculation or its submission, whichever is later.
    #[serde(default)]
    pub key: Key,
    /// What its priority is made of besides age and fair share (weighted job
    /// size, partition and QOS factors less nice), its association (None: no
    /// ticket) and when it became eligible: all a calculation reads.
    #[serde(default)]
    pub fixed: f64,
    #[serde(default)]
    pub assoc: Option<u32>,
    #[serde(default)]
    pub since: Time,
    /// Its charge per second while it runs (NaN: not worked out yet; an
    /// allocation does not change while a job holds it).
    #[serde(default = "nan", skip_serializing_if = "is_nan")]
    pub rate: f64,
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
    /// A calculation was made whose Fair Tree and priorities are not worked
    /// out yet (they are when a pass could start a job: until then the order
    /// changes nothing); `calc_usage` is its usage.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub stale: bool,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    calc_usage: Vec<f64>,
    /// The calculation the tree and the queued jobs' priorities are as of.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tree_at: Option<Time>,
    /// The tree as Fair Tree walks it (worked out again after a restore).
    #[serde(skip)]
    shape: Shape,
    /// Usage was charged since the last Fair Tree (decay alone changes no
    /// rank: it scales every usage alike).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    charged: bool,
    /// The last charge's seconds and their decay (most are a whole period).
    #[serde(skip)]
    pow_cache: (Time, f64),
    /// Reused by each calculation's reordering.
    #[serde(skip)]
    pub scratch: Vec<(Key, u32)>,
    /// The highest QOS priority.
    #[serde(default)]
    pub max_qos: u32,
}

impl Sharing {
    pub fn new(accounts: Accounts, cfg: PriorityConfig, facts: MachineFacts) -> Sharing {
        let usage = vec![0.0; accounts.assocs.len()];
        let mut shape = Shape::of(&accounts);
        let mut rows = Vec::new();
        fair_tree_into(&accounts, &mut shape, &usage, &mut rows);
        Sharing { accounts, cfg, facts, usage, rows, last_calc: None, jobs: Vec::new(), tail: None, unsorted: false, stale: false, calc_usage: Vec::new(), tree_at: None, shape, charged: false, pow_cache: (-1, 1.0), scratch: Vec::new(), max_qos: 0 }.with_max_qos()
    }

    fn with_max_qos(mut self) -> Sharing {
        self.max_qos = self.accounts.qos.iter().map(|q| q.priority).max().unwrap_or(0);
        self
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
        if self.pow_cache.0 != secs {
            self.pow_cache = (secs, self.cfg.decay_per_second().powf(secs as f64));
        }
        let add = secs as f64 * self.pow_cache.1 * rate * factor * later;
        self.charged |= add != 0.0;
        self.usage[t.assoc.0 as usize] += add;
    }

    /// The calculation at `last_calc` is made: its usage is kept for Fair
    /// Tree, which runs when the order is next needed ([`Sharing::refresh_tree`]).
    pub fn calculated(&mut self) {
        self.calc_usage.clone_from(&self.usage);
        self.stale = true;
    }

    /// Fair Tree on the usage of the last calculation, if not run since.
    pub fn refresh_tree(&mut self) {
        if !self.stale {
            return;
        }
        if !self.shape.fits(&self.accounts) {
            self.shape = Shape::of(&self.accounts);
            self.charged = true;
        }
        // decay alone scales every usage alike and changes no rank
        if self.charged {
            fair_tree_into(&self.accounts, &mut self.shape, &self.calc_usage, &mut self.rows);
            self.charged = false;
        }
        self.stale = false;
        self.tree_at = self.last_calc;
    }

    /// The tree as `sshare` shows it: Fair Tree as of the last calculation
    /// (worked out now if the engine has not needed it yet), each
    /// association's raw usage as it stands (subtrees added up).
    pub fn view(&self) -> Vec<FsRow> {
        let mut rows = if self.stale {
            let mut rows = Vec::new();
            fair_tree_into(&self.accounts, &mut Shape::of(&self.accounts), &self.calc_usage, &mut rows);
            rows
        } else {
            self.rows.clone()
        };
        let mut raw = self.usage.clone();
        for i in (1..raw.len()).rev() {
            if let Some(p) = self.accounts.assocs[i].parent {
                raw[p.0 as usize] += raw[i];
            }
        }
        for (r, u) in rows.iter_mut().zip(raw) {
            r.raw_usage = u;
        }
        rows
    }

    /// A job's factors at `at`: eligible since `since`, `procs` processors on
    /// at least `nodes` nodes, in partition `part`.
    pub fn factors_of(&self, ticket: Option<Ticket>, at: Time, since: Time, procs: u32, nodes: u32, part: usize) -> Factors {
        let c = &self.cfg;
        let (fs, qos, nice) = match ticket.filter(|t| self.accounts.valid(t)) {
            Some(t) => {
                let q = if self.max_qos == 0 { 0.0 } else { self.accounts.qos(t.qos).priority as f64 / self.max_qos as f64 };
                (self.rows[t.assoc.0 as usize].fairshare, q, t.nice)
            }
            None => (0.0, 0.0, 0),
        };
        let part = self.facts.part_factor.get(part).copied().unwrap_or(0.0);
        c.combine(c.age_factor(at, since), fs, c.jobsize_factor(procs, nodes, self.facts.cores, self.facts.nodes), part, qos, nice)
    }

    /// The parts of a job's priority that do not change while it waits.
    pub fn fixed_of(&self, ticket: Option<Ticket>, procs: u32, nodes: u32, part: usize) -> (f64, Option<u32>) {
        let f = self.factors_of(ticket, 0, 0, procs, nodes, part);
        let w = &self.cfg.weights;
        let fixed = w.jobsize as f64 * f.jobsize + w.partition as f64 * f.partition + w.qos as f64 * f.qos - f.nice as f64;
        (fixed, ticket.filter(|t| self.accounts.valid(t)).map(|t| t.assoc.0))
    }

    /// A queued job's priority at `at` from what [`Sharing::fixed_of`] gave
    /// (the sum [`PriorityConfig::combine`] makes, in the same order).
    pub fn priority_at(&self, j: &JobShare, at: Time) -> u32 {
        let w = &self.cfg.weights;
        let fs = j.assoc.map_or(0.0, |a| self.rows[a as usize].fairshare);
        let sum = w.age as f64 * self.cfg.age_factor(at, j.since) + w.fairshare as f64 * fs + j.fixed;
        sum.clamp(1.0, u32::MAX as f64) as u32
    }

    /// A queued job's place in the order.
    pub fn key_of(&self, priority: u32, part: usize, submit: Time, id: u64) -> Key {
        let tier = self.facts.tier.get(part).copied().unwrap_or(0);
        (std::cmp::Reverse(tier), std::cmp::Reverse(priority), submit, id)
    }

    /// Whether a job with this key, put at the tail, is in order there; the
    /// tail's key follows it if so.
    pub fn at_tail(&mut self, key: Key) -> bool {
        if self.tail.is_some_and(|t| key < t) {
            return false;
        }
        self.tail = Some(key);
        true
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
