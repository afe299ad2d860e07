//! `tessera sim bench|bench-pass|bench-stream` and `tessera power bench`: the
//! benchmarks of `tessera_bench`, their reports printed.

use crate::cli::{Format, PassBenchArgs, PowerBenchArgs, SimBenchArgs, StreamBenchArgs};
use crate::out::{out, outln};
use anyhow::Result;
use tessera_bench::{pass, power, sim, stream};

pub fn sim(a: SimBenchArgs) -> Result<()> {
    let o = sim::Options { traces: a.traces, policies: a.policies, repeat: a.repeat, naive_max_jobs: a.naive_max_jobs, naive_conservative_max_jobs: a.naive_conservative_max_jobs, max_jobs: a.max_jobs, cluster: a.cluster, fairshare: a.fairshare };
    // each row as it is measured
    let rest = sim::run(&o, a.format == Format::Json, &mut |line| outln!("{line}").and_then(|()| crate::out::flush()))?;
    out!("{rest}")
}

pub fn pass(a: PassBenchArgs) -> Result<()> {
    let o = pass::Options {
        trace: a.trace, skip: a.skip, nodes: a.nodes, cores: a.cores, busy: a.busy, queued: a.queued, wide_head: a.wide_head, drained: a.drained, mem_per_core: a.mem_per_core, passes: a.passes,
        policies: a.policies, seed: a.seed, reference: a.reference, fairshare: a.fairshare,
    };
    out!("{}", pass::run(&o, a.format == Format::Json)?)
}

pub fn stream(a: StreamBenchArgs) -> Result<()> {
    let o = stream::Options { trace: a.trace, jobs: a.jobs, capacity: a.capacity, queued: a.queued, policy: a.policy.parse()?, seed: a.seed };
    out!("{}", stream::run(&o, a.format == Format::Json)?)
}

pub fn power(a: PowerBenchArgs) -> Result<()> {
    let o = power::Options {
        trace: a.trace, cluster: a.cluster, jobs: a.jobs, instances: a.instances, repeat: a.repeat, variant: a.variant, milp_node_limit: a.milp_node_limit, milp_time_limit: a.milp_time_limit,
        highs_time_limit: a.highs_time_limit, mps_dir: a.mps_dir,
    };
    out!("{}", power::run(&o, a.format == Format::Json)?)
}
