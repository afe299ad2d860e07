//! `tessera sim run`: its flags made into a `RunSpec` and `Outputs`
//! (`tessera_studies`), run, the summary printed.

use crate::cli::{Format, SimRunArgs};
use crate::out::{out, outln};
use anyhow::Result;
use std::path::Path;
use std::time::Instant;
use tessera_studies::run::{execute, write_outputs, Outputs};
use tessera_studies::{PowerSpec, RunSpec};

/// The run `sim run`'s flags describe (its outputs aside).
pub fn spec_of(a: &SimRunArgs) -> RunSpec {
    let p = &a.power;
    let power = PowerSpec {
        parm_variant: p.parm_variant.clone(), solver: p.solver.clone(), milp_node_limit: p.milp_node_limit, milp_time_limit: p.milp_time_limit, alpha: p.alpha, fse: p.fse, amortize_resizes: p.amortize_resizes,
        parm_rule: p.parm_rule.clone(), charge_solve_time: p.charge_solve_time, cap: p.cap, power_seed: p.power_seed, budget_w: p.budget_w, theta: p.theta.clone(), parallelism: p.parallelism.clone(),
        sigma: p.sigma.clone(), package_base_w: p.package_base_w, power_out: p.power_out.clone(),
    };
    RunSpec {
        trace: a.trace.clone(), capacity: a.capacity, cluster: a.cluster.clone(), partition: a.partition.clone(), nodeset: a.nodeset.clone(), nodeset_optional: a.nodeset_optional,
        nodeset_tolerance: a.nodeset_tolerance, nodeset_priority: a.nodeset_priority.clone(), nodeset_plus: a.nodeset_plus.clone(),
        // the flag's parser accepted it
        policy: a.policy.parse().expect("a known policy"),
        power, lenient: a.lenient, max_jobs: a.max_jobs, arrival_scale: a.arrival_scale,
        priority: a.priority.clone(), accounts: a.accounts.clone(), reservations: a.reservations.clone(), usage_from: a.usage_from.clone(), usage_run: a.usage_run,
    }
}

pub fn run(mut a: SimRunArgs) -> Result<()> {
    let t0 = Instant::now();
    a.trace = a.trace.as_deref().map(tessera_workload::traces::resolve).transpose()?;
    let spec = spec_of(&a);
    let outputs = Outputs { jobs_out: a.jobs_out, swf_out: a.swf_out, summary: a.summary, report: a.report, db: a.db, site: a.site };
    let mut inputs: Vec<(&str, &Path)> = Vec::new();
    inputs.extend(spec.trace.as_deref().map(|p| ("trace", p)));
    inputs.extend(spec.cluster.as_deref().map(|p| ("cluster file", p)));
    inputs.extend(spec.accounts.as_deref().map(|p| ("accounts file", p)));
    inputs.extend(spec.reservations.as_deref().map(|p| ("reservations file", p)));
    inputs.extend(spec.usage_from.as_deref().map(|p| ("accounting store", p)));
    tessera_studies::files::check(&inputs, &outputs.named(&spec))?;
    let (summary, json) = write_outputs(execute(&spec)?, &spec, &outputs, t0)?;
    match a.format {
        Format::Json => outln!("{json}")?,
        Format::Table => out!("{}", summary.table())?,
    }
    Ok(())
}

