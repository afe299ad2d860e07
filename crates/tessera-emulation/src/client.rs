//! The client side of the live system that the users' commands and the tools
//! share: the runtime a command's calls run on, API errors as users read them,
//! and applying a cluster file to a running controller.

use anyhow::{anyhow, Context, Result};
use std::path::PathBuf;
use tessera_proto::client::Target;
use hyper::Method;
use tessera_core::{hostlist, quote};
use tessera_proto::api::{ReconfigureReply, ReconfigureRequest};
use tessera_proto::client::{Client, ClientError};

/// How a client finds the controller: `--controller URL`, else
/// `$TESSERA_CONTROLLER`, else the state directory of a `tessera up`
/// (`--state-dir`, `$TESSERA_STATE_DIR`, default `./tessera-state`), whose Unix
/// socket identifies the caller by the kernel's peer credentials.
#[derive(clap::Args, Clone, Debug)]
pub struct ClientArgs {
    /// Controller URL: http://HOST:PORT (with a token) or unix:/PATH.
    #[arg(long, env = "TESSERA_CONTROLLER", global = true)]
    pub controller: Option<String>,
    /// State directory of a running controller (its socket and endpoint file).
    #[arg(long, env = "TESSERA_STATE_DIR", global = true)]
    pub state_dir: Option<PathBuf>,
    /// Token for a TCP controller (tessera token create).
    #[arg(long, env = "TESSERA_TOKEN", global = true, hide_env_values = true)]
    pub token: Option<String>,
}

/// The controller a client command talks to.
pub fn connect(c: &ClientArgs) -> Result<Client> {
    if let Some(url) = &c.controller {
        return Ok(Client::new(Target::parse(url).map_err(|e| anyhow!(e))?, c.token.clone()));
    }
    let dir = c.state_dir.clone().unwrap_or_else(|| PathBuf::from("tessera-state"));
    let ep = dir.join("controller.json");
    let text = std::fs::read_to_string(&ep).with_context(|| {
        format!("no controller found: {} is missing (start one with `tessera up --state-dir {}`, or give --controller URL)", ep.display(), dir.display())
    })?;
    let ep: tessera_controller::Endpoint = serde_json::from_str(&text).with_context(|| format!("{}", ep.display()))?;
    let target = if c.token.is_some() { Target::parse(&ep.url).map_err(|e| anyhow!(e))? } else { Target::Unix(ep.socket) };
    Ok(Client::new(target, c.token.clone()))
}

/// The runtime a command's calls to the controller run on (one thread).
pub fn runtime() -> Result<tokio::runtime::Runtime> {
    Ok(tokio::runtime::Builder::new_current_thread().enable_all().build()?)
}

/// An API error as the user should read it: the message, and for bad input
/// what was expected.
pub fn explain(e: ClientError) -> anyhow::Error {
    match e {
        ClientError::Api { status, body } => {
            let mut m = body.error.clone();
            if status == 401 || status == 403 {
                m = format!("{m} (HTTP {status})");
            }
            anyhow!(m)
        }
        other => anyhow!(other),
    }
}

/// Apply a cluster file's text through `POST /v1/cluster`; what changed, as
/// [`changes`] says it.
pub fn reconfigure(client: &mut Client, rt: &tokio::runtime::Runtime, text: &str, path: &str) -> Result<String> {
    let body = ReconfigureRequest { toml: text.to_string(), path: path.to_string() };
    let r: ReconfigureReply = rt.block_on(client.call(Method::POST, "/v1/cluster", Some(&body))).map_err(explain)?;
    Ok(format!("cluster {}, {} nodes, {} cores; {}", quote::text(&r.cluster.name), r.cluster.nodes, r.cluster.cores, changes(&(r.added, r.removed, r.changed))))
}

/// "nodes added: …; removed: …; changed: …" (hostlists, `none` when empty).
pub fn changes((added, removed, changed): &(Vec<String>, Vec<String>, Vec<String>)) -> String {
    let names = |v: &Vec<String>| if v.is_empty() { "none".to_string() } else { quote::text(&hostlist::compress(&v.iter().map(|s| s.as_str()).collect::<Vec<_>>())).into_owned() };
    format!("nodes added: {}; removed: {}; changed: {}", names(added), names(removed), names(changed))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn changes_are_hostlists_or_none() {
        let v = |x: &[&str]| x.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert_eq!(changes(&(v(&["n1", "n2", "n3"]), v(&[]), v(&["x\ny"]))), "nodes added: n[1-3]; removed: none; changed: x\\ny");
    }
}

/// Change a controller's power budget (`POST /v1/cluster/budget`): what it
/// says, `Power budget W W (was P W)`.
pub fn set_budget(client: &mut Client, rt: &tokio::runtime::Runtime, watts: f64) -> Result<String> {
    let body = tessera_proto::api::BudgetRequest { watts };
    let r: tessera_proto::api::BudgetReply = rt.block_on(client.call(Method::POST, "/v1/cluster/budget", Some(&body))).map_err(explain)?;
    Ok(match r.previous_w {
        Some(p) => format!("Power budget {} W (was {p} W)", r.budget_w),
        None => format!("Power budget {} W", r.budget_w),
    })
}
