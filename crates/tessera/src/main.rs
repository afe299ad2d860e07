//! `tessera`: the one binary users type. Noun-first subcommands:
//! `tessera sim run|bench|bench-pass|bench-stream`, `tessera workload generate|info`,
//! `tessera cluster show`, `tessera publish`, `tessera acct [apel]`, `tessera report`,
//! `tessera experiment`, `tessera power bench`, `tessera node powercap show|set`;
//! the live system: `tessera controller`, `tessera agent`, `tessera up|down`,
//! `tessera job submit|cancel|hold|release|suspend|resume|requeue|show`,
//! `tessera queue`, `tessera nodes`, `tessera node drain|resume|down|up`,
//! `tessera token create`.
//!
//! Exit codes: 0 success; 1 an error (bad input, I/O), printed once as a chain;
//! 2 a usage error (unknown flag or value), printed by the argument parser;
//! 70 (`tessera controller`) the controller stopped itself, fail-stop: a panic,
//! or its journal or accounting store could not be written; its supervisor
//! (`tessera up`, systemd) starts it again and recovery runs.

mod acct_cmd;
mod bench_cmd;
mod cli;
mod cluster_cmd;
mod daemon_cmd;
mod experiment_cmd;
mod live_args;
mod live_cmd;
mod node_cmd;
mod out;
mod sim_cmd;
mod study_cmd;
mod tool_args;
mod tools_cmd;
mod values;
mod workload_cmd;

use clap::Parser;
use std::process::ExitCode;

fn main() -> ExitCode {
    // SIGPIPE stays ignored (Rust's default): the daemons and every client of
    // the controller write to sockets whose peer may be gone (a killed
    // controller, a client that hung up), and that must be an error, not the
    // end of the process. A closed standard output (`tessera acct | head`)
    // still ends the command quietly, as Unix tools do: see `out.rs`.
    // Large buffers (the job table, the queue's tree, per-job lists) grow by
    // doubling. Taken from glibc's heap, each growth copies and leaves a hole,
    // so peak memory depended on the order of allocations (RICC: 89 to 106 MB
    // for the same run after an unrelated change). From 1 MiB they are mapped
    // on their own: they grow in place and go back to the system when freed,
    // while a pass's smaller buffers stay on the heap (BENCHMARKS.md).
    // SAFETY: a tunable of the allocator, set before anything is allocated.
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    unsafe {
        libc::mallopt(libc::M_MMAP_THRESHOLD, 1 << 20);
    }
    let args = cli::Cli::parse();
    // daemons log what they do; commands only warn
    let daemon = matches!(args.command, cli::Command::Controller(_) | cli::Command::Agent(_));
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_env("TESSERA_LOG").unwrap_or_else(|_| if daemon { "info" } else { "warn" }.into()),
        )
        .with_writer(std::io::stderr)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .init();
    match run(args).and_then(|()| out::flush()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::from(1)
        }
    }
}

fn run(args: cli::Cli) -> anyhow::Result<()> {
    match args.command {
        cli::Command::Sim { command } => match command {
            cli::SimCommand::Run(a) => sim_cmd::run(a),
            cli::SimCommand::Compare(a) => study_cmd::compare(a),
            cli::SimCommand::Sweep(a) => study_cmd::sweep(a),
            cli::SimCommand::Bench(a) => bench_cmd::sim(a),
            cli::SimCommand::BenchPass(a) => bench_cmd::pass(a),
            cli::SimCommand::BenchStream(a) => bench_cmd::stream(a),
        },
        cli::Command::Workload { command } => match command {
            cli::WorkloadCommand::Generate(a) => workload_cmd::generate(a),
            cli::WorkloadCommand::Info(a) => workload_cmd::info(a),
        },
        cli::Command::Cluster { command } => match command {
            cli::ClusterCommand::Show(a) => cluster_cmd::show(a),
            cli::ClusterCommand::Reconfigure(a) => live_cmd::reconfigure_cmd(a),
            cli::ClusterCommand::SetBudget(a) => live_cmd::set_budget(a),
        },
        cli::Command::Publish(a) => cluster_cmd::publish(a),
        cli::Command::Import { command } => Ok(out::out!("{}", tessera_slurm::cli::run(command, &mut std::io::stderr())?)?),
        cli::Command::Account(a) => Ok(out::out!("{}", tessera_emulation::admin::account(a)?)?),
        cli::Command::Share(a) => Ok(out::out!("{}", tessera_emulation::admin::share(a)?)?),
        cli::Command::Prio(a) => Ok(out::out!("{}", tessera_emulation::admin::prio(a)?)?),
        cli::Command::Reservation { command } => Ok(out::out!("{}", tessera_emulation::admin::reservation(command)?)?),
        cli::Command::Node { command } => match command {
            cli::NodeCommand::Powercap(a) => node_cmd::powercap(a),
            cli::NodeCommand::Drain(a) => live_cmd::node_action("drain", a),
            cli::NodeCommand::Resume(a) => live_cmd::node_action("resume", a),
            cli::NodeCommand::Down(a) => live_cmd::node_action("down", a),
            cli::NodeCommand::Up(a) => live_cmd::node_action("up", a),
        },
        cli::Command::Controller(a) => daemon_cmd::controller(a),
        cli::Command::SleepJob(a) => tools_cmd::sleep_job(a),
        cli::Command::Replay(a) => tools_cmd::replay(a),
        cli::Command::Metrics(a) => tools_cmd::metrics(a),
        cli::Command::Twin(a) => tools_cmd::twin(a),
        cli::Command::Chaos(a) => tools_cmd::chaos(a),
        cli::Command::Soak(a) => tools_cmd::soak(a),
        cli::Command::Agent(a) => daemon_cmd::agent(a),
        cli::Command::Up(a) => daemon_cmd::up(a),
        cli::Command::Loadtest(a) => tools_cmd::loadtest(a),
        cli::Command::Down(a) => daemon_cmd::down(a),
        cli::Command::Token { command: live_args::TokenCommand::Create(a) } => daemon_cmd::token(a),
        cli::Command::Run(a) => live_cmd::run(a),
        cli::Command::Salloc(a) => std::process::exit(tessera_agent::run::salloc_here(live_cmd::connect(&a.client)?, &a.salloc).map_err(|e| anyhow::anyhow!("salloc: {e}"))?),
        cli::Command::Queue(a) => live_cmd::queue(a),
        cli::Command::Nodes(a) => live_cmd::nodes(a),
        cli::Command::Job { command } => match command {
            live_args::JobCommand::Submit(a) => live_cmd::submit(a),
            live_args::JobCommand::Cancel(a) => live_cmd::job_action("cancel", a),
            live_args::JobCommand::Hold(a) => live_cmd::job_action("hold", a),
            live_args::JobCommand::Release(a) => live_cmd::job_action("release", a),
            live_args::JobCommand::Suspend(a) => live_cmd::job_action("suspend", a),
            live_args::JobCommand::Resume(a) => live_cmd::job_action("resume", a),
            live_args::JobCommand::Requeue(a) => live_cmd::job_action("requeue", a),
            live_args::JobCommand::Show(a) => live_cmd::job_show(a),
            live_args::JobCommand::Script(a) => live_cmd::job_script(a),
        },
        cli::Command::Power { command } => match command {
            cli::PowerCommand::Bench(a) => bench_cmd::power(a),
        },
        cli::Command::Acct { command: Some(cli::AcctCommand::Apel(a)), .. } => acct_cmd::apel_export(a),
        cli::Command::Acct { command: Some(cli::AcctCommand::Runs(a)), .. } => acct_cmd::runs(a),
        cli::Command::Acct { command: Some(cli::AcctCommand::Prune(a)), .. } => acct_cmd::prune(a),
        cli::Command::Acct { command: None, list } => acct_cmd::list_jobs(list),
        cli::Command::Report { command } => acct_cmd::report(command),
        cli::Command::Experiment { command } => match command {
            cli::ExperimentCommand::Nodesets(a) => experiment_cmd::nodesets(a),
            cli::ExperimentCommand::Parm(a) => experiment_cmd::parm(a),
            cli::ExperimentCommand::ParmAttribution(a) => experiment_cmd::attribution(a),
            cli::ExperimentCommand::ParmTestbed(a) => experiment_cmd::testbed(a),
        },
    }
}
