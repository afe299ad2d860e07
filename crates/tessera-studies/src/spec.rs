//! [`RunSpec`]: one simulation, typed. `tessera sim run` builds it from its
//! flags, a comparison from the flags given after `--` and each of its
//! variants, a sweep case from its sweep file's keys ([`RunSpec::set`]); every
//! one of them then runs through [`crate::run::execute`], so a case gives
//! exactly what the same `sim run` gives alone.

use anyhow::{anyhow, bail, Result};
use std::path::PathBuf;
use std::str::FromStr;
use tessera_core::PolicyKind;

/// What a simulation runs: the workload, the machine, the policy. Outputs (the
/// files `sim run` writes) are not part of it ([`crate::run::Outputs`]).
#[derive(Clone, Debug)]
pub struct RunSpec {
    /// SWF trace; none: the embedded default workload on the embedded default cluster.
    pub trace: Option<PathBuf>,
    /// Processors of a pool machine (without a cluster file).
    pub capacity: Option<u64>,
    pub cluster: Option<PathBuf>,
    /// Partition of the cluster file the jobs go to.
    pub partition: Option<String>,
    /// Node set for every job, with the options below (raw, as given).
    pub nodeset: Option<String>,
    pub nodeset_optional: bool,
    pub nodeset_tolerance: Option<f64>,
    pub nodeset_priority: Option<String>,
    pub nodeset_plus: Option<String>,
    pub policy: PolicyKind,
    pub power: PowerSpec,
    /// Skip malformed trace lines instead of failing.
    pub lenient: bool,
    /// Only the first N jobs (N >= 1).
    pub max_jobs: Option<usize>,
    /// Multiply inter-arrival times by this factor.
    pub arrival_scale: Option<f64>,
    /// Queue order (`fifo`, `multifactor`), as given; None: the accounts'
    /// settings, else submission order.
    pub priority: Option<String>,
    /// Accounts file.
    pub accounts: Option<PathBuf>,
    /// Reservations file (`[[reservation]]` tables, made at the trace's start).
    pub reservations: Option<PathBuf>,
    /// Fair share seeded from this accounting store's run `usage_run` (None: the newest).
    pub usage_from: Option<PathBuf>,
    pub usage_run: Option<i64>,
}

/// Power-aware runs on a cluster with a power budget (docs/power.md): the
/// `--parm-*` family of flags, as given (checked by [`crate::power::setup`]).
#[derive(Clone, Debug, Default)]
pub struct PowerSpec {
    pub parm_variant: Option<String>,
    pub solver: Option<String>,
    pub milp_node_limit: Option<u64>,
    pub milp_time_limit: Option<f64>,
    pub alpha: Option<f64>,
    pub fse: Option<i64>,
    pub amortize_resizes: bool,
    pub parm_rule: Option<String>,
    pub charge_solve_time: bool,
    pub cap: Option<f64>,
    pub power_seed: Option<u64>,
    pub budget_w: Option<f64>,
    pub theta: Option<String>,
    pub parallelism: Option<String>,
    pub sigma: Option<String>,
    pub package_base_w: Option<f64>,
    /// Where the power drawn over time goes (an output, but a power flag: it
    /// needs a power-budgeted cluster).
    pub power_out: Option<PathBuf>,
}

/// The flags [`RunSpec::set`] takes.
pub const FLAGS: &[&str] = &[
    "--trace", "--capacity", "--cluster", "--partition", "--nodeset", "--nodeset-optional", "--nodeset-tolerance", "--nodeset-priority", "--nodeset-plus", "--policy", "--lenient", "--max-jobs",
    "--arrival-scale", "--priority", "--accounts", "--parm-variant", "--solver", "--milp-node-limit", "--milp-time-limit", "--alpha", "--fse", "--amortize-resizes", "--parm-rule", "--charge-solve-time", "--cap",
    "--power-seed", "--budget-w", "--theta", "--parallelism", "--sigma", "--package-base-w",
];

impl RunSpec {
    /// `policy` on the embedded default workload and cluster, everything else as
    /// `sim run` leaves it without flags.
    pub fn new(policy: PolicyKind) -> RunSpec {
        RunSpec {
            trace: None,
            capacity: None,
            cluster: None,
            partition: None,
            nodeset: None,
            nodeset_optional: false,
            nodeset_tolerance: None,
            nodeset_priority: None,
            nodeset_plus: None,
            policy,
            power: PowerSpec::default(),
            lenient: false,
            max_jobs: None,
            arrival_scale: None,
            priority: None,
            accounts: None,
            reservations: None,
            usage_from: None,
            usage_run: None,
        }
    }

    /// Set what `sim run`'s flag `flag` (`--max-jobs`, …; one of [`FLAGS`]) sets,
    /// to `value` as text: a sweep file's `fixed` and `parameters` (a flag that
    /// takes no value, such as `--lenient`, takes `true` or `false` here).
    pub fn set(&mut self, flag: &str, value: &str) -> Result<()> {
        fn parsed<T: FromStr>(flag: &str, value: &str, what: &str) -> Result<T> {
            value.trim().parse().map_err(|_| anyhow!("{flag} {value}: expected {what}"))
        }
        let text = || Some(value.to_string());
        let number = || parsed::<f64>(flag, value, "a number");
        let yes = || parsed::<bool>(flag, value, "true or false");
        let p = &mut self.power;
        match flag {
            "--trace" => self.trace = Some(value.into()),
            "--capacity" => self.capacity = Some(parsed(flag, value, "a whole number of processors")?),
            "--cluster" => self.cluster = Some(value.into()),
            "--partition" => self.partition = text(),
            "--nodeset" => self.nodeset = text(),
            "--nodeset-optional" => self.nodeset_optional = yes()?,
            "--nodeset-tolerance" => self.nodeset_tolerance = Some(number()?),
            "--nodeset-priority" => self.nodeset_priority = text(),
            "--nodeset-plus" => self.nodeset_plus = text(),
            "--policy" => self.policy = value.trim().parse().map_err(|e| anyhow!("{flag} {value}: {e}"))?,
            "--lenient" => self.lenient = yes()?,
            "--max-jobs" => self.max_jobs = Some(parsed::<usize>(flag, value, "a whole number >= 1").and_then(|n| if n >= 1 { Ok(n) } else { bail!("{flag} {value}: expected a whole number >= 1") })?),
            "--arrival-scale" => self.arrival_scale = Some(number()?),
            "--priority" => {
                value.trim().parse::<tessera_core::share::PriorityKind>().map_err(|e| anyhow!("{flag} {value}: {e}"))?;
                self.priority = text();
            }
            "--accounts" => self.accounts = Some(value.into()),
            "--parm-variant" => p.parm_variant = text(),
            "--solver" => p.solver = text(),
            "--milp-node-limit" => p.milp_node_limit = Some(parsed(flag, value, "a whole number")?),
            "--milp-time-limit" => p.milp_time_limit = Some(number()?),
            "--alpha" => p.alpha = Some(number()?),
            "--fse" => p.fse = Some(parsed(flag, value, "whole seconds")?),
            "--amortize-resizes" => p.amortize_resizes = yes()?,
            "--parm-rule" => p.parm_rule = text(),
            "--charge-solve-time" => p.charge_solve_time = yes()?,
            "--cap" => p.cap = Some(number()?),
            "--power-seed" => p.power_seed = Some(parsed(flag, value, "a whole number")?),
            "--budget-w" => p.budget_w = Some(number()?),
            "--theta" => p.theta = text(),
            "--parallelism" => p.parallelism = text(),
            "--sigma" => p.sigma = text(),
            "--package-base-w" => p.package_base_w = Some(number()?),
            _ => bail!("{flag}: not a flag of `sim run` that shapes a run; expected one of {}", FLAGS.join(", ")),
        }
        Ok(())
    }

    /// The flags that need another (`sim run`'s parser checks them on the command
    /// line; a sweep file's are checked here).
    pub fn check(&self) -> Result<()> {
        if self.capacity.is_some() && self.cluster.is_some() {
            bail!("--capacity sizes a pool, --cluster names a cluster: give one of them");
        }
        for (given, flag) in [(self.partition.is_some(), "--partition"), (self.nodeset.is_some(), "--nodeset")] {
            if given && self.cluster.is_none() {
                bail!("{flag} needs --cluster");
            }
        }
        let options = [(self.nodeset_optional, "--nodeset-optional"), (self.nodeset_tolerance.is_some(), "--nodeset-tolerance"), (self.nodeset_priority.is_some(), "--nodeset-priority"), (self.nodeset_plus.is_some(), "--nodeset-plus")];
        if let Some((_, flag)) = options.iter().find(|(given, _)| *given && self.nodeset.is_none()) {
            bail!("{flag} needs --nodeset");
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_flag_sets_its_field_and_a_bad_value_names_the_flag() {
        let mut s = RunSpec::new(PolicyKind::Easy);
        for (f, v) in [("--max-jobs", "400"), ("--arrival-scale", "0.5"), ("--policy", "conservative"), ("--lenient", "true"), ("--budget-w", "1e5"), ("--theta", "0.2,0.6")] {
            s.set(f, v).unwrap();
        }
        assert_eq!((s.max_jobs, s.arrival_scale, s.policy, s.lenient, s.power.budget_w, s.power.theta.as_deref()), (Some(400), Some(0.5), PolicyKind::Conservative, true, Some(1e5), Some("0.2,0.6")));
        assert_eq!(s.set("--max-jobs", "0").unwrap_err().to_string(), "--max-jobs 0: expected a whole number >= 1");
        assert!(s.set("--policy", "sjf").unwrap_err().to_string().starts_with("--policy sjf: unknown policy `sjf`"));
        let e = s.set("--no-such-flag", "1").unwrap_err().to_string();
        assert!(e.starts_with("--no-such-flag: not a flag of `sim run`") && e.contains("--max-jobs"), "{e}");
        for f in FLAGS {
            // every flag listed is taken (a value of the wrong type is an error naming it)
            let e = RunSpec::new(PolicyKind::Easy).set(f, "x").err().map(|e| e.to_string());
            assert!(e.as_ref().is_none_or(|e| e.starts_with(f)), "{f}: {e:?}");
        }
    }

    #[test]
    fn flags_that_need_another_are_checked() {
        let mut s = RunSpec::new(PolicyKind::Easy);
        s.nodeset_optional = true;
        assert_eq!(s.check().unwrap_err().to_string(), "--nodeset-optional needs --nodeset");
        s.nodeset = Some("ONEOF:FEATURE".into());
        assert_eq!(s.check().unwrap_err().to_string(), "--nodeset needs --cluster");
        s.cluster = Some("c.toml".into());
        s.check().unwrap();
        s.capacity = Some(64);
        assert!(s.check().is_err());
    }
}
