//! The emulation tools (`tessera_emulation`): `sleep-job`, `replay`,
//! `metrics`, `twin`, `chaos`, `soak` and `loadtest`, their reports printed.

use crate::daemon_cmd::bin;
use crate::live_args::ListFormat;
use crate::out::{out, outln};
use crate::tool_args::*;
use anyhow::Result;
use tessera_emulation::{chaos, loadtest, metrics, replay, sleep_job, slurm_twin, soak, twin};

/// A report as JSON or as its table.
fn print<T: serde::Serialize + std::fmt::Display>(r: &T, format: ListFormat) -> Result<()> {
    match format {
        ListFormat::Json => outln!("{}", serde_json::to_string_pretty(r)?),
        ListFormat::Table => out!("{r}"),
    }
}

pub fn sleep_job(a: SleepJobArgs) -> Result<()> {
    let count_from = match a.count_from {
        CountFrom::Scheduler => sleep_job::CountFrom::Scheduler,
        CountFrom::Process => sleep_job::CountFrom::Process,
    };
    sleep_job::run(&sleep_job::SleepJob { id: a.id, runtime: a.runtime, log: a.log, submit: a.submit, cores: a.cores, count_from, work: a.work })
}

pub fn replay(a: ReplayArgs) -> Result<()> {
    let o = replay::Options {
        trace: a.trace, max_jobs: a.max_jobs, shrink: a.shrink, runtime_shrink: a.runtime_shrink, estimate_shrink: a.estimate_shrink, submit_shrink: a.submit_shrink, warmup: a.warmup, group: a.group,
        period: a.period, warmup_period: a.warmup_period, drift: a.drift, out: a.out, lenient: a.lenient, timeout: a.timeout, reservations: a.reservations,
    };
    let table = a.format == ListFormat::Table;
    // in a table each replay's report as it ends; in JSON all of them at the end
    let outcomes = replay::replay(&o, || crate::live_cmd::connect(&a.client), &bin()?, &mut |o| if table { out!("{o}") } else { Ok(()) })?;
    if !table {
        outln!("{}", serde_json::to_string_pretty(&outcomes)?)?;
    }
    Ok(())
}

pub fn metrics(a: MetricsArgs) -> Result<()> {
    let r = metrics::compute(&metrics::Options { log: a.log, db: a.db, state_dir: a.state_dir, run: a.run, capacity: a.capacity })?;
    print(&r, a.format)
}

pub fn twin(a: TwinArgs) -> Result<()> {
    if a.slurm {
        let trace = a.trace.ok_or_else(|| anyhow::anyhow!("--slurm needs --trace"))?;
        let policy = a.policy.unwrap_or_else(|| "conservative".into());
        let o = slurm_twin::Options { trace, max_jobs: a.max_jobs, shrink: a.shrink, policy, nodes: a.slurm_nodes, cpus: a.slurm_cpus, sched_params: a.sched_params, emulator: a.emulator, dir: a.dir };
        return print(&slurm_twin::run(&o)?, a.format);
    }
    let policy = a.policy.unwrap_or_else(|| "easy".into());
    let o = twin::Options { trace: a.trace, testbed: a.testbed, parm: a.parm, max_jobs: a.max_jobs, shrink: a.shrink, cluster: a.cluster, policy, agents: a.agents, reservations: a.reservations, dir: a.dir, coalesce_ms: a.coalesce_ms };
    print(&twin::run(&o, &bin()?)?, a.format)
}

pub fn chaos(a: ChaosArgs) -> Result<()> {
    let o = chaos::Options {
        trace: a.trace, max_jobs: a.max_jobs, shrink: a.shrink, cluster: a.cluster, policy: a.policy, agents: a.agents, every: a.every, down: a.down, heartbeat_timeout: a.heartbeat_timeout,
        seed: a.seed, out: a.out,
    };
    let c = chaos::run(&o, &bin()?)?;
    print(&c, a.format)?;
    c.check()
}

pub fn soak(a: SoakArgs) -> Result<()> {
    let o = soak::Options {
        rate: a.rate, duration: a.duration, flat_from: a.flat_from, sample_every: a.sample_every, tolerance: a.tolerance, agents: a.agents, cluster: a.cluster, policy: a.policy, dir: a.dir,
    };
    let s = soak::run(&o, &bin()?)?;
    print(&s, a.format)?;
    s.check()
}

pub fn loadtest(a: LoadTestArgs) -> Result<()> {
    let o = loadtest::Options {
        jobs: a.jobs, clients: a.clients, agents: a.agents, cluster: a.cluster, policy: a.policy, passes: a.passes, compare_jobs: a.compare_jobs, timeout: a.timeout, dir: a.dir,
    };
    let r = loadtest::run(&o, &bin()?)?;
    print(&r, a.format)?;
    r.check()
}
