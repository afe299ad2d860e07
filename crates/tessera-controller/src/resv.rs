//! Advance reservations live (`tessera reservation create|show|delete`, as
//! scontrol): a request checked against the engine as it stands, journaled
//! as the reservation it resolved to (absolute instants, node indices), so
//! that a restart replays the same decision.

use crate::auth::{Identity, Role};
use crate::ApiError;
use crate::state::{Event, State};
use tessera_core::{hostlist, Cluster, Effect, Engine, Input, Rejection, Reservation, ResvError, ResvRequest};
use tessera_proto::api::ReservationInfo;

/// The event that makes `req` at `now` and the reservation's name, or why not
/// (403 for a non-operator, 400 for a field, 409 for what the engine refuses).
pub fn admit(state: &State, cluster: &Cluster, who: &Identity, req: &ResvRequest, now: i64) -> Result<(Event, String), ApiError> {
    if who.role != Role::Operator {
        return Err(ApiError::new(403, format!("{} is not an operator: only operators make reservations", who.user)));
    }
    let engine = state.engine();
    // Slurm names an unnamed one after its maker: root_3
    // (of n reservations' names, one of the first n + 1 candidates is free)
    let name = (1..=engine.reservations().len() + 1).map(|k| format!("{}_{k}", who.user)).find(|n| engine.reservation(n).is_none()).unwrap_or_default();
    let spec = req.resolve(cluster, now, &name).map_err(|e| ApiError::new(400, e.to_string()))?;
    let mut trial = engine.clone();
    let mut fx = Vec::new();
    trial.handle(now.max(engine.now()), Input::Reserve(Box::new(spec.clone())), &mut fx);
    if let Some(Effect::Rejected { reason, .. }) = fx.into_iter().find(|x| matches!(x, Effect::Rejected { .. })) {
        return Err(ApiError::new(409, why(cluster, &reason)));
    }
    tracing::info!(user = %who.user, name = %spec.name, "a reservation is made");
    let name = spec.name.clone();
    Ok((Event::Reserve(Box::new(spec)), name))
}

/// The event that deletes reservation `name`, or why not.
pub fn admit_delete(engine: &Engine, who: &Identity, name: &str) -> Result<Event, ApiError> {
    if who.role != Role::Operator {
        return Err(ApiError::new(403, format!("{} is not an operator: only operators delete reservations", who.user)));
    }
    if engine.reservation(name).is_none() {
        return Err(ApiError::new(404, format!("no reservation {}", tessera_core::quote::text(name))));
    }
    tracing::info!(user = %who.user, name, "a reservation is deleted");
    Ok(Event::Unreserve(name.to_string()))
}

/// A refusal with node names for the engine's node indices.
pub fn why(cluster: &Cluster, r: &Rejection) -> String {
    let node = |n: &u32| cluster.nodes.get(*n as usize).map_or_else(|| format!("#{n}"), |x| x.name.clone());
    match r {
        Rejection::Reservation { name, why: ResvError::Busy { node: n, until } } => {
            format!("reservation {name}: node {} is busy: a running job holds it until {} (Flags=IGNORE_JOBS reserves it anyway)", node(n), tessera_core::civil::datetime(*until))
        }
        Rejection::Reservation { name, why: ResvError::Overlap { node: n, other } } => {
            format!("reservation {name}: node {} is in reservation {other} over the same window (only a maintenance reservation may overlap another)", node(n))
        }
        other => other.to_string(),
    }
}

/// A reservation as the API shows it, at `now`.
pub fn info(cluster: &Cluster, r: &Reservation, now: i64) -> ReservationInfo {
    let (start, end) = r.window_after(now).unwrap_or((r.spec.start, r.spec.end));
    let names: Vec<&str> = r.nodes.iter().map(|&n| cluster.nodes[n as usize].name.as_str()).collect();
    let mut flags = Vec::new();
    if r.spec.maint {
        flags.push("MAINT".to_string());
    }
    if r.spec.ignore_jobs {
        flags.push("IGNORE_JOBS".to_string());
    }
    match r.spec.repeat {
        tessera_core::Repeat::Daily => flags.push("DAILY".into()),
        tessera_core::Repeat::Weekly => flags.push("WEEKLY".into()),
        tessera_core::Repeat::Once => {}
    }
    ReservationInfo {
        name: r.spec.name.clone(),
        start,
        end,
        nodes: hostlist::compress(&names),
        node_count: r.nodes.len() as u32,
        flags,
        users: r.spec.users.clone(),
        accounts: r.spec.accounts.clone(),
        active: start <= now && now < end,
    }
}
