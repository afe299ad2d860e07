//! Multifactor priority (Slurm's priority/multifactor): a job's priority is a
//! weighted sum of factors between 0 and 1 (age, fair share, job size,
//! partition, QOS) less its nice value, recomputed every calculation period.

use crate::Time;
use serde::{Deserialize, Serialize};
use std::fmt;
use std::str::FromStr;

/// How the queue is ordered.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum PriorityKind {
    /// Submission order (Slurm's priority/basic).
    Fifo,
    /// Weighted factors (Slurm's priority/multifactor with Fair Tree).
    Multifactor,
}

impl PriorityKind {
    pub const NAMES: &'static str = "fifo, multifactor";
    pub fn name(self) -> &'static str {
        match self {
            PriorityKind::Fifo => "fifo",
            PriorityKind::Multifactor => "multifactor",
        }
    }
}

impl FromStr for PriorityKind {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s.to_ascii_lowercase().as_str() {
            "fifo" | "basic" => Ok(PriorityKind::Fifo),
            "multifactor" => Ok(PriorityKind::Multifactor),
            _ => Err(format!("unknown priority {}; expected one of {}", crate::quote::bounded(s), Self::NAMES)),
        }
    }
}

impl fmt::Display for PriorityKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// The unit fair-share usage is charged in.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum UsageUnit {
    /// Core-seconds, whatever the node (Slurm's default, CPU TRES-seconds).
    Raw,
    /// Core-seconds times each node's scaling factor: an hour on a node twice
    /// as fast as the reference costs two.
    Normalized,
    /// Canonical units held (the largest of cores, memory and GPUs over the
    /// partition's unit, so a node left unusable costs what it holds) times
    /// seconds times the node's scaling factor.
    Canonical,
}

impl UsageUnit {
    pub const NAMES: &'static str = "raw, normalized, canonical";
    pub fn name(self) -> &'static str {
        match self {
            UsageUnit::Raw => "raw",
            UsageUnit::Normalized => "normalized",
            UsageUnit::Canonical => "canonical",
        }
    }
}

impl FromStr for UsageUnit {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s.to_ascii_lowercase().as_str() {
            "raw" => Ok(UsageUnit::Raw),
            "normalized" => Ok(UsageUnit::Normalized),
            "canonical" => Ok(UsageUnit::Canonical),
            _ => Err(format!("unknown usage unit {}; expected one of {}", crate::quote::bounded(s), Self::NAMES)),
        }
    }
}

/// PriorityWeight*: each factor's weight.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Weights {
    pub age: u32,
    pub fairshare: u32,
    pub jobsize: u32,
    pub partition: u32,
    pub qos: u32,
}

/// The priority settings (slurm.conf's Priority* keys).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct PriorityConfig {
    pub kind: PriorityKind,
    pub weights: Weights,
    /// PriorityMaxAge: age at which the age factor reaches 1.
    pub max_age: Time,
    /// PriorityDecayHalfLife: usage halves over this (0: no decay).
    pub half_life: Time,
    /// PriorityCalcPeriod: how often usage decays, running jobs are charged,
    /// the fair-share tree is recomputed and queued jobs' priorities with it.
    pub calc_period: Time,
    pub usage: UsageUnit,
    /// PriorityFavorSmall: the job-size factor favours small jobs.
    pub favor_small: bool,
}

impl Default for PriorityConfig {
    /// Tessera's defaults. Slurm's PriorityWeight* default to 0, which orders
    /// by submission alone; these make fair share the main factor, age next.
    fn default() -> Self {
        PriorityConfig {
            kind: PriorityKind::Fifo,
            weights: Weights { age: 1000, fairshare: 10_000, jobsize: 0, partition: 1000, qos: 1000 },
            max_age: 7 * 86_400,
            half_life: 7 * 86_400,
            calc_period: 300,
            usage: UsageUnit::Normalized,
            favor_small: false,
        }
    }
}

/// A job's factors and priority, as `sprio` shows them (each weighted factor
/// is weight × factor).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Factors {
    pub age: f64,
    pub fairshare: f64,
    pub jobsize: f64,
    pub partition: f64,
    pub qos: f64,
    pub nice: i32,
    /// The weighted sum less nice, truncated to an integer (at least 1).
    pub priority: u32,
}

impl PriorityConfig {
    /// The age factor of a job eligible since `since`.
    pub fn age_factor(&self, now: Time, since: Time) -> f64 {
        if self.max_age <= 0 {
            return 0.0;
        }
        ((now - since).max(0) as f64 / self.max_age as f64).min(1.0)
    }

    /// The job-size factor (Slurm's): the mean of the job's share of the
    /// nodes (its least node count) and of the cores, or of what it leaves
    /// free with PriorityFavorSmall.
    pub fn jobsize_factor(&self, procs: u32, min_nodes: u32, total_cores: u64, total_nodes: u64) -> f64 {
        if total_cores == 0 || total_nodes == 0 {
            return 0.0;
        }
        let (n, c) = (min_nodes.max(1) as f64 / total_nodes as f64, procs as f64 / total_cores as f64);
        let f = if self.favor_small { ((1.0 - n).max(0.0) + (1.0 - c).max(0.0)) / 2.0 } else { (n + c) / 2.0 };
        f.clamp(0.0, 1.0)
    }

    /// The priority from the factors (each in 0..=1).
    pub fn combine(&self, age: f64, fairshare: f64, jobsize: f64, partition: f64, qos: f64, nice: i32) -> Factors {
        let w = &self.weights;
        // (age, fair share, then the parts fixed while a job waits: the
        // engine adds them in this order too)
        let sum = w.age as f64 * age + w.fairshare as f64 * fairshare + (w.jobsize as f64 * jobsize + w.partition as f64 * partition + w.qos as f64 * qos - nice as f64);
        // Slurm: at least 1 (0 means held), truncated to an integer
        let priority = sum.clamp(1.0, u32::MAX as f64) as u32;
        Factors { age, fairshare, jobsize, partition, qos, nice, priority }
    }

    /// Slurm's per-second decay factor, `1 - ln 2 / half-life` (ln 2 taken
    /// as 0.693, as Slurm does), 1 without decay. Usage is multiplied by it
    /// to the power of the seconds elapsed, so after a half-life 0.50007 of it
    /// is left (0.5 exactly would be `0.5^(t / half-life)`).
    pub fn decay_per_second(&self) -> f64 {
        if self.half_life <= 0 {
            1.0
        } else {
            1.0 - 0.693 / self.half_life as f64
        }
    }

    /// The decay over `dt` seconds: usage is multiplied by this.
    pub fn decay(&self, dt: Time) -> f64 {
        if dt <= 0 {
            return 1.0;
        }
        self.decay_per_second().powf(dt as f64).max(f64::MIN_POSITIVE)
    }

    /// The decays over 0, 1, … `n - 1` calculation periods added up: what
    /// a charge made at each of `n` calculations in a row is worth at the
    /// last, over one made there (a geometric series).
    pub fn periods_decay(&self, n: Time) -> f64 {
        let r = self.decay(self.calc_period);
        if r >= 1.0 {
            n as f64
        } else {
            (1.0 - r.powf(n as f64)) / (1.0 - r)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slurms_decay_and_truncated_priority() {
        let c = PriorityConfig::default();
        // a 7-day half-life and a 5-minute period (Slurm's defaults)
        assert!((c.decay_per_second() - 0.999_998_854_166_67).abs() < 1e-14);
        assert!((c.decay(300) - 0.999_656_308_9).abs() < 1e-10);
        assert!((c.decay(7 * 86_400) - 0.500_07).abs() < 1e-5);
        let f = c.combine(0.5, 0.25, 0.0, 1.0, 0.0, 3);
        // 500 + 2500 + 1000 - 3, truncated
        assert_eq!(f.priority, 3997);
        assert_eq!(c.combine(0.0, 0.0, 0.0, 0.0, 0.0, 10).priority, 1, "never below 1 (0 means held)");
        // docs/scheduling.md's worked example: two days old, uAA1's fair share
        // (13/21), the only partition, QOS priority 10 of at most 100
        let f = c.combine(c.age_factor(2 * 86_400, 0), 13.0 / 21.0, 0.0, 1.0, 0.1, 0);
        assert_eq!(f.priority, 7576);
        assert_eq!(c.age_factor(100, 100 + 5), 0.0);
        assert_eq!(c.age_factor(7 * 86_400 * 2, 0), 1.0);
        // 2 of 8 nodes, 16 of 64 cores
        assert_eq!(c.jobsize_factor(16, 2, 64, 8), 0.25);
        assert_eq!(PriorityConfig { favor_small: true, ..c }.jobsize_factor(16, 2, 64, 8), 0.75);
    }
}
