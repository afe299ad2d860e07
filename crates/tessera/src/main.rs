//! `tessera`: the one binary users type. Noun-first subcommands:
//! `tessera sim run|bench|bench-pass|bench-stream`, `tessera workload generate|info`,
//! `tessera cluster show`, `tessera publish`, `tessera acct [apel]`, `tessera report`,
//! `tessera experiment`, `tessera power bench`, `tessera node powercap show|set`.
//!
//! Exit codes: 0 success; 1 an error (bad input, I/O), printed once as a chain;
//! 2 a usage error (unknown flag or value), printed by the argument parser.

mod acct_cmd;
mod bench_cmd;
mod cli;
mod cluster_cmd;
mod experiment_cmd;
mod node_cmd;
mod power_cmd;
mod record;
mod sim_cmd;
mod workload_cmd;

use clap::Parser;
use std::process::ExitCode;

fn main() -> ExitCode {
    // Die quietly on a closed pipe (`tessera acct | head`), as Unix tools do.
    // SAFETY: restoring the default disposition of SIGPIPE before any thread starts.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
    let args = cli::Cli::parse();
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_env("TESSERA_LOG").unwrap_or_else(|_| "warn".into()),
        )
        .with_writer(std::io::stderr)
        .init();
    match run(args) {
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
            cli::SimCommand::Bench(a) => sim_cmd::bench(a),
            cli::SimCommand::BenchPass(a) => bench_cmd::bench_pass(a),
            cli::SimCommand::BenchStream(a) => bench_cmd::bench_stream(a),
        },
        cli::Command::Workload { command } => match command {
            cli::WorkloadCommand::Generate(a) => workload_cmd::generate(a),
            cli::WorkloadCommand::Info(a) => workload_cmd::info(a),
        },
        cli::Command::Cluster { command } => match command {
            cli::ClusterCommand::Show(a) => cluster_cmd::show(a),
        },
        cli::Command::Publish(a) => cluster_cmd::publish(a),
        cli::Command::Node { command: cli::NodeCommand::Powercap(a) } => node_cmd::powercap(a),
        cli::Command::Power { command } => match command {
            cli::PowerCommand::Bench(a) => power_cmd::bench(a),
        },
        cli::Command::Acct { command: Some(cli::AcctCommand::Apel(a)), .. } => acct_cmd::apel_export(a),
        cli::Command::Acct { command: None, list } => acct_cmd::list_jobs(list),
        cli::Command::Report { command } => acct_cmd::report(command),
        cli::Command::Experiment { command } => match command {
            cli::ExperimentCommand::Nodesets(a) => experiment_cmd::nodesets(a),
            cli::ExperimentCommand::Parm(a) => power_cmd::experiment(a),
        },
    }
}
