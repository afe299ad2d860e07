//! What `tessera share` (sshare) and `tessera prio` (sprio) read: the Fair
//! Tree of the engine's accounts, and each pending job's weighted factors.

use crate::state::State;
use tessera_core::{Cluster, JobId};
use tessera_proto::api::{PrioRow, ShareRow};

/// Every association in tree order (an account, then its users, then its
/// sub-accounts), or None without accounts.
pub fn shares(state: &State) -> Option<Vec<ShareRow>> {
    let v = state.engine().shares()?;
    let children = v.accounts.children();
    let mut out = Vec::new();
    let mut stack = vec![(tessera_core::share::AssocId(0), 0u32)];
    while let Some((id, depth)) = stack.pop() {
        let a = v.accounts.get(id);
        let r = &v.rows[id.0 as usize];
        out.push(ShareRow {
            account: a.account.clone(),
            user: a.user.clone(),
            depth,
            raw_shares: a.shares,
            norm_shares: r.norm_shares,
            raw_usage: r.raw_usage,
            norm_usage: r.norm_usage,
            effective_usage: r.effective_usage,
            level_fs: if r.level_fs.is_infinite() { "inf".into() } else if r.level_fs.is_nan() { String::new() } else { format!("{:.6}", r.level_fs) },
            fairshare: r.fairshare,
        });
        // users first, then accounts, each in the file's order
        let mut kids = children[id.0 as usize].clone();
        kids.sort_by_key(|&k| (!v.accounts.get(k).is_user(), k.0));
        for &k in kids.iter().rev() {
            stack.push((k, depth + 1));
        }
    }
    Some(out)
}

/// Each pending job's weighted priority factors, highest priority first.
pub fn priorities(state: &State, cluster: &Cluster) -> Option<Vec<PrioRow>> {
    let v = state.engine().shares()?;
    let w = v.config.weights;
    let mut out: Vec<PrioRow> = state
        .ledger
        .jobs
        .values()
        .filter_map(|m| {
            let f = state.engine().priority_factors(JobId(m.id))?;
            let (account, qos_name) = match state.engine().job(JobId(m.id)).and_then(|(s, _)| s.ticket) {
                Some(t) if v.accounts.valid(&t) => (v.accounts.get(t.assoc).account.clone(), v.accounts.qos(t.qos).name.clone()),
                _ => (String::new(), String::new()),
            };
            Some(PrioRow {
                job: m.id,
                partition: cluster.partitions.get(m.req.partition as usize).map_or_else(String::new, |p| p.name.clone()),
                user: m.user.clone(),
                account,
                priority: f.priority,
                age: f.age * w.age as f64,
                fairshare: f.fairshare * w.fairshare as f64,
                jobsize: f.jobsize * w.jobsize as f64,
                partition_factor: f.partition * w.partition as f64,
                qos_name,
                qos: f.qos * w.qos as f64,
                nice: f.nice,
            })
        })
        .collect();
    out.sort_by_key(|r| (std::cmp::Reverse(r.priority), r.job));
    Some(out)
}

/// The event that makes an operator's change to the accounts (sacctmgr's
/// words), or why not: 403 for a non-operator, 400 for the words, 409 for
/// what the engine refuses (a live job's association would go).
pub fn admit_change(state: &State, who: &crate::auth::Identity, words: &[String], now: i64) -> Result<crate::state::Event, crate::ApiError> {
    use crate::ApiError;
    if who.role != crate::auth::Role::Operator {
        return Err(ApiError::new(403, format!("{} is not an operator: only operators change the accounts", who.user)));
    }
    let engine = state.engine();
    let Some(v) = engine.shares() else {
        return Err(ApiError::new(409, "the cluster has no accounts to change (give its cluster file accounts when the state directory is created)".to_string()));
    };
    let new = tessera_core::share::sacctmgr::apply(v.accounts, words).map_err(|m| ApiError::new(400, m))?;
    let mut trial = engine.clone();
    let mut fx = Vec::new();
    trial.handle(now.max(engine.now()), tessera_core::Input::SetAccounts(Box::new(new.clone())), &mut fx);
    if let Some(tessera_core::Effect::Rejected { reason, .. }) = fx.into_iter().find(|x| matches!(x, tessera_core::Effect::Rejected { .. })) {
        return Err(ApiError::new(409, format!("the accounts cannot change so: {reason}")));
    }
    tracing::info!(user = %who.user, change = %words.join(" "), "the accounts change");
    Ok(crate::state::Event::SetAccounts(Box::new(new)))
}
