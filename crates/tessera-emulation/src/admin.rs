//! Operators' commands against a running controller that the `tessera`
//! binary only dispatches: `tessera reservation create|show|delete` (as
//! scontrol's). Each returns the text to print.

use crate::client::{connect, explain, runtime, ClientArgs};
use anyhow::{anyhow, Result};
use clap::Subcommand;
use hyper::Method;
use tessera_core::duration::format_duration;
use tessera_core::civil::datetime as format_instant;
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
        /// Only this reservation.
        name: Option<String>,
        #[command(flatten)]
        client: ClientArgs,
    },
    /// Delete a reservation (operators); pending jobs that asked for it are held.
    Delete {
        /// The reservation to delete.
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

/// `tessera share` (sshare): each association's shares, usage and fair share.
#[derive(clap::Args, Debug)]
pub struct ShareArgs {
    /// Long form: also NormUsage and LevelFS (sshare -l).
    #[arg(short, long)]
    pub long: bool,
    /// JSON rows instead of a table.
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub client: ClientArgs,
}

/// `tessera prio` (sprio): each pending job's weighted priority factors.
#[derive(clap::Args, Debug)]
pub struct PrioArgs {
    /// JSON rows instead of a table.
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub client: ClientArgs,
}

pub fn share(a: ShareArgs) -> Result<String> {
    let rows: Vec<tessera_proto::api::ShareRow> = runtime()?.block_on(connect(&a.client)?.call::<(), _>(Method::GET, "/v1/shares", None)).map_err(explain)?;
    if a.json {
        return Ok(serde_json::to_string_pretty(&rows)? + "\n");
    }
    Ok(share_table(&rows, a.long))
}

/// sshare's table: the account indented by its depth, the fair-share factor
/// on user lines only.
pub fn share_table(rows: &[tessera_proto::api::ShareRow], long: bool) -> String {
    let mut s = format!("{:<20} {:<10} {:>9} {:>11} {:>11} ", "Account", "User", "RawShares", "NormShares", "RawUsage");
    if long {
        s += &format!("{:>11} ", "NormUsage");
    }
    s += &format!("{:>13} {:>10}", "EffectvUsage", "FairShare");
    if long {
        s += &format!(" {:>10}", "LevelFS");
    }
    s += "\n";
    for r in rows {
        let account = format!("{}{}", " ".repeat(r.depth as usize), tessera_core::quote::text(&r.account));
        let user = r.user.as_deref().map(tessera_core::quote::text).unwrap_or_default();
        s += &format!("{account:<20} {user:<10} {:>9} {:>11.6} {:>11} ", r.raw_shares, r.norm_shares, r.raw_usage as u64);
        if long {
            s += &format!("{:>11.6} ", r.norm_usage);
        }
        let fs = if r.user.is_some() { format!("{:.6}", r.fairshare) } else { String::new() };
        s += &format!("{:>13.6} {fs:>10}", r.effective_usage);
        if long {
            s += &format!(" {:>10}", r.level_fs);
        }
        s += "\n";
    }
    s
}

pub fn prio(a: PrioArgs) -> Result<String> {
    let rows: Vec<tessera_proto::api::PrioRow> = runtime()?.block_on(connect(&a.client)?.call::<(), _>(Method::GET, "/v1/priorities", None)).map_err(explain)?;
    if a.json {
        return Ok(serde_json::to_string_pretty(&rows)? + "\n");
    }
    let mut s = format!("{:>8} {:<10} {:<10} {:<10} {:>10} {:>10} {:>10} {:>10} {:>10} {:<8} {:>10} {:>6}\n", "JOBID", "PARTITION", "USER", "ACCOUNT", "PRIORITY", "AGE", "FAIRSHARE", "JOBSIZE", "PARTITION", "QOSNAME", "QOS", "NICE");
    for r in &rows {
        let t = |x: &str| tessera_core::quote::text(x).into_owned();
        s += &format!(
            "{:>8} {:<10} {:<10} {:<10} {:>10} {:>10.0} {:>10.0} {:>10.0} {:>10.0} {:<8} {:>10.0} {:>6}\n",
            r.job, t(&r.partition), t(&r.user), t(&r.account), r.priority, r.age, r.fairshare, r.jobsize, r.partition_factor, t(&r.qos_name), r.qos, r.nice
        );
    }
    Ok(s)
}

/// `tessera account add|modify|delete|show` (sacctmgr's).
#[derive(clap::Args, Debug)]
pub struct AccountArgs {
    /// add|modify|delete account|user|qos NAME [Key=Value ...] (operators),
    /// or show [qos]: e.g. `add account physics Parent=root Fairshare=40`,
    /// `add user alice Account=physics`, `modify user alice set MaxJobs=4`,
    /// `delete user alice Account=physics`, `add qos high Priority=100`.
    #[arg(required = true, num_args = 1.., allow_hyphen_values = true)]
    pub words: Vec<String>,
    #[command(flatten)]
    pub client: ClientArgs,
}

pub fn account(a: AccountArgs) -> Result<String> {
    let rt = runtime()?;
    let mut client = connect(&a.client)?;
    let show = a.words[0].eq_ignore_ascii_case("show");
    let qos = a.words.get(1).is_some_and(|w| w.eq_ignore_ascii_case("qos"));
    if show && (a.words.len() == 1 || (a.words.len() == 2 && qos)) {
        let acc: tessera_core::share::Accounts = rt.block_on(client.call::<(), _>(Method::GET, "/v1/accounts", None)).map_err(explain)?;
        return Ok(if qos { qos_table(&acc) } else { accounts_table(&acc) });
    }
    let body = tessera_proto::api::AccountChange { words: a.words.clone() };
    rt.block_on(client.call::<_, ()>(Method::POST, "/v1/accounts", Some(&body))).map_err(explain)?;
    Ok(format!("Changed: {}\n", a.words.join(" ")))
}

/// sacctmgr show qos: each QOS with its priority, usage factor, limits and
/// preemption.
pub fn qos_table(acc: &tessera_core::share::Accounts) -> String {
    let tres = |t: &tessera_core::share::Tres| [t.cpu.map(|c| format!("cpu={c}")), t.mem_mb.map(|m| format!("mem={m}M"))].into_iter().flatten().collect::<Vec<_>>().join(",");
    let opt = |x: Option<u32>| x.map_or(String::new(), |v| v.to_string());
    let mut s = format!("{:<12} {:>10} {:>8} {:>12} {:>14} {:>9} {:>11} {:>14} {:>8} {:<16} {:<8}\n", "Name", "Priority", "UsageFactor", "MaxWall", "MaxTRESPU", "MaxJobsPU", "MaxSubmitPU", "GrpTRES", "GrpJobs", "Preempt", "PreemptMode");
    for q in &acc.qos {
        let t = |x: &str| tessera_core::quote::text(x).into_owned();
        let preempt = q.preempt.iter().map(|&p| acc.qos(p).name.clone()).collect::<Vec<_>>().join(",");
        let wall = q.max_wall.map_or(String::new(), format_duration);
        let mode = match q.preempt_mode {
            tessera_core::share::QosPreemptMode::Suspend => "suspend",
            tessera_core::share::QosPreemptMode::Requeue => "requeue",
        };
        s += &format!(
            "{:<12} {:>10} {:>8} {:>12} {:>14} {:>9} {:>11} {:>14} {:>8} {:<16} {:<8}\n",
            t(&q.name),
            q.priority,
            q.usage_factor,
            wall,
            tres(&q.max_tres_per_user),
            opt(q.max_jobs_per_user),
            opt(q.max_submit_jobs_per_user),
            tres(&q.grp_tres),
            opt(q.grp_jobs),
            t(&preempt),
            mode
        );
    }
    s
}

/// sacctmgr show assoc: each association in tree order with its shares,
/// limits, QOS and (users) whether it is their default account.
pub fn accounts_table(acc: &tessera_core::share::Accounts) -> String {
    use tessera_core::share::AssocId;
    let mut s = format!("{:<20} {:<10} {:>6} {:>8} {:>8} {:>8} {:>12} {:>12} {:<20} {:<8}\n", "Account", "User", "Share", "GrpJobs", "MaxJobs", "MaxSubmit", "GrpTRES", "MaxWall", "QOS", "Default");
    let children = acc.children();
    let mut stack = vec![(AssocId(0), 0usize)];
    let opt = |x: Option<u32>| x.map_or(String::new(), |v| v.to_string());
    while let Some((id, depth)) = stack.pop() {
        let a = acc.get(id);
        let l = &a.limits;
        let tres = [l.grp_tres.cpu.map(|c| format!("cpu={c}")), l.grp_tres.mem_mb.map(|m| format!("mem={m}M"))].into_iter().flatten().collect::<Vec<_>>().join(",");
        let qos = a.qos.iter().map(|&q| acc.qos(q).name.clone()).collect::<Vec<_>>().join(",");
        let share = if a.use_parent { "parent".to_string() } else { a.shares.to_string() };
        let default = a.user.as_ref().is_some_and(|u| acc.defaults.get(u) == Some(&a.account));
        s += &format!(
            "{:<20} {:<10} {:>6} {:>8} {:>8} {:>8} {:>12} {:>12} {:<20} {:<8}\n",
            format!("{}{}", " ".repeat(depth), tessera_core::quote::text(&a.account)),
            a.user.as_deref().map(tessera_core::quote::text).unwrap_or_default(),
            share,
            opt(l.grp_jobs),
            opt(l.max_jobs),
            opt(l.max_submit_jobs),
            tres,
            l.max_wall.map(format_duration).unwrap_or_default(),
            qos,
            if default { "yes" } else { "" }
        );
        let mut kids = children[id.0 as usize].clone();
        kids.sort_by_key(|&k| (!acc.get(k).is_user(), k.0));
        for &k in kids.iter().rev() {
            stack.push((k, depth + 1));
        }
    }
    s
}
