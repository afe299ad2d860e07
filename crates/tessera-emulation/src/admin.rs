//! Operators' commands against a running controller that the `tessera`
//! binary only dispatches: `tessera reservation create|show|delete` (as
//! scontrol's). Each returns the text to print.

use crate::client::{connect, explain, runtime, ClientArgs};
use anyhow::{anyhow, Result};
use clap::Subcommand;
use hyper::Method;
use tessera_core::duration::format_duration;
use tessera_core::resv::request::format_instant;
use tessera_core::ResvRequest;
use tessera_proto::api::ReservationInfo;

#[derive(Subcommand, Debug)]
pub enum ReservationCommand {
    /// Reserve nodes over a window (operators), as scontrol create
    /// reservation: StartTime=now+1hour Duration=2:00:00 Nodes=n[1-4]
    /// (or NodeCnt=4 Features=gpu) Flags=MAINT[,DAILY|WEEKLY,IGNORE_JOBS]
    /// Users=alice Accounts=physics ReservationName=NAME.
    Create {
        /// Key=Value words (keys in any case).
        #[arg(required = true, num_args = 1..)]
        words: Vec<String>,
        #[command(flatten)]
        client: ClientArgs,
    },
    /// Show reservations (all, or the one named), as scontrol show reservation.
    Show {
        name: Option<String>,
        #[command(flatten)]
        client: ClientArgs,
    },
    /// Delete a reservation (operators); pending jobs that asked for it are held.
    Delete {
        name: String,
        #[command(flatten)]
        client: ClientArgs,
    },
}

pub fn reservation(c: ReservationCommand) -> Result<String> {
    let rt = runtime()?;
    match c {
        ReservationCommand::Create { words, client } => {
            let req = ResvRequest::from_words(&words).map_err(|e| anyhow!("tessera reservation create: {e}"))?;
            let r: ReservationInfo = rt.block_on(connect(&client)?.call(Method::POST, "/v1/reservations", Some(&req))).map_err(explain)?;
            Ok(format!("Reservation created: {}\n", r.name))
        }
        ReservationCommand::Show { name, client } => {
            let all: Vec<ReservationInfo> = rt.block_on(connect(&client)?.call::<(), _>(Method::GET, "/v1/reservations", None)).map_err(explain)?;
            let shown: Vec<&ReservationInfo> = all.iter().filter(|r| name.as_ref().is_none_or(|n| *n == r.name)).collect();
            match (&name, shown.is_empty()) {
                (Some(n), true) => Err(anyhow!("no reservation {}", tessera_core::quote::text(n))),
                (None, true) => Ok("No reservations in the system\n".into()),
                _ => Ok(shown.into_iter().map(show).collect()),
            }
        }
        ReservationCommand::Delete { name, client } => {
            let path = format!("/v1/reservations/{}", name.bytes().map(|b| if b.is_ascii_alphanumeric() || b"-_.".contains(&b) { (b as char).to_string() } else { format!("%{b:02X}") }).collect::<String>());
            rt.block_on(connect(&client)?.call::<(), ()>(Method::DELETE, &path, None)).map_err(explain)?;
            Ok(String::new())
        }
    }
}

/// One reservation as scontrol shows it.
pub fn show(r: &ReservationInfo) -> String {
    let list = |v: &[String]| if v.is_empty() { "(null)".to_string() } else { v.join(",") };
    format!(
        "ReservationName={} StartTime={} EndTime={} Duration={}\n   Nodes={} NodeCnt={} Flags={}\n   Users={} Accounts={} State={}\n\n",
        tessera_core::quote::text(&r.name),
        format_instant(r.start),
        format_instant(r.end),
        format_duration(r.end - r.start),
        r.nodes,
        r.node_count,
        list(&r.flags),
        list(&r.users),
        list(&r.accounts),
        if r.active { "ACTIVE" } else { "INACTIVE" }
    )
}
