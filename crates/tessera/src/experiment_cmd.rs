//! `tessera experiment nodesets|parm|parm-attribution|parm-testbed`: the
//! reproducible experiments of `tessera_studies`, their reports printed.

use crate::cli::{BaselineSize, Format, NodesetsArgs, ParmAttributionArgs, ParmExperimentArgs, ParmTestbedArgs};
use crate::out::out;
use anyhow::Result;
use tessera_studies::{attribution, nodesets, parm_paper, testbed};

pub fn nodesets(a: NodesetsArgs) -> Result<()> {
    let o = nodesets::Options { trace: a.trace, cluster: a.cluster, policy: a.policy.parse()?, arrival_scales: a.arrival_scales, max_jobs: a.max_jobs };
    out!("{}", nodesets::run(&o, a.format == Format::Json)?)
}

pub fn parm(a: ParmExperimentArgs) -> Result<()> {
    let o = parm_paper::Options {
        trace: a.trace, cluster: a.cluster, jobs: a.jobs, set_starts: a.set_starts, gammas: a.gammas, variants: a.variants, table_alpha: a.table_alpha, alphas: a.alphas, naive_caps: a.naive_caps,
        curve_gamma: a.curve_gamma, solver: a.solver, milp_node_limit: a.milp_node_limit, milp_time_limit: a.milp_time_limit, power_seed: a.power_seed, amortize_resizes: a.amortize_resizes,
        parm_rule: a.parm_rule, no_solve_time: a.no_solve_time, threads: a.threads,
    };
    out!("{}", parm_paper::run(&o, a.format == Format::Json)?)
}

pub fn attribution(a: ParmAttributionArgs) -> Result<()> {
    let o = attribution::Options {
        trace: a.trace, cluster: a.cluster, jobs: a.jobs, set_starts: a.set_starts, gammas: a.gammas, seeds: a.seeds, alpha: a.alpha, variants: a.variants, naive_cap: a.naive_cap, solver: a.solver,
        no_solve_time: a.no_solve_time, sweep_parallelism: a.sweep_parallelism, sweep_sigma: a.sweep_sigma, sweep_seeds: a.sweep_seeds, sweep_gamma: a.sweep_gamma, threads: a.threads,
    };
    out!("{}", attribution::run(&o, a.format == Format::Json)?)
}

pub fn testbed(a: ParmTestbedArgs) -> Result<()> {
    let baseline_size = match a.baseline_size {
        BaselineSize::Min => testbed::BaselineSize::Min,
        BaselineSize::Max => testbed::BaselineSize::Max,
    };
    let o = testbed::Options { seeds: a.seeds, alpha: a.alpha, parm_rule: a.parm_rule, n_max_factor: a.n_max_factor, baseline_size, expand_boots: a.expand_boots, no_solve_time: a.no_solve_time, threads: a.threads };
    out!("{}", testbed::run(&o, a.format == Format::Json)?)
}
