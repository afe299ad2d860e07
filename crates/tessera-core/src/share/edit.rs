//! The accounts change under a running engine (`Input::SetAccounts`, an
//! operator's `tessera account add|modify|delete`): associations and QOS are
//! matched by name, so each association keeps its usage and each live job its
//! association, QOS and place; limits are counted again; the priorities are
//! worked out again on the new tree. Refused, with nothing changed, if a live
//! job's association or QOS is gone.

use super::accounts::{Accounts, AssocId, Ticket};
use super::limits::LimitBook;
use super::state::Sharing;
use crate::contract::Rejection;
use crate::engine::{Engine, Machine};
use crate::job::{JobIdx, JobState};

/// An association's id in `new`, by its account and user.
fn same(old: &Accounts, new: &Accounts, id: AssocId) -> Option<AssocId> {
    let a = old.get(id);
    match &a.user {
        Some(u) => new.user_assoc(u, &a.account),
        None => new.account(&a.account),
    }
}

impl Engine {
    pub(crate) fn set_accounts(&mut self, new: Accounts) -> Result<(), Rejection> {
        let Some(old) = self.share.as_deref() else {
            return Err(Rejection::Unsupported { input: "set accounts", engine: "without accounts" });
        };
        let live: Vec<JobIdx> = self.t.live().collect();
        let mut tickets: Vec<(JobIdx, Ticket)> = Vec::new();
        for &j in &live {
            let Some(t) = self.t.spec(j).ticket.filter(|t| old.accounts.valid(t)) else { continue };
            let qos = &old.accounts.qos(t.qos).name;
            match (same(&old.accounts, &new, t.assoc), new.qos_id(qos)) {
                (Some(assoc), Some(q)) => tickets.push((j, Ticket { assoc, qos: q, nice: t.nice })),
                _ => {
                    return Err(Rejection::CannotReconfigure(format!(
                        "job {} is charged to {} under QOS {qos}, which the new accounts do not have (let it end, or cancel it, first)",
                        self.t.spec(j).id,
                        old.accounts.get(t.assoc).label()
                    )))
                }
            }
        }
        // usage carried by name; the tree worked out on it
        let mut s = Sharing::new(new.clone(), old.cfg, old.facts.clone());
        for i in 0..old.accounts.assocs.len() {
            if let Some(n) = same(&old.accounts, &new, AssocId(i as u32)) {
                s.usage[n.0 as usize] = old.usage[i];
            }
        }
        s.scale = old.scale;
        s.last_calc = old.last_calc;
        s.jobs = old.jobs.clone();
        // charged on their own until the next calculation (the flows are by
        // association)
        for js in &mut s.jobs {
            js.quit(old.flows.upto);
        }
        s.calculated();
        s.refresh_tree();
        for &(j, t) in &tickets {
            self.t.get_mut(j).spec.ticket = Some(t);
        }
        // limits counted again; jobs they held are let go (the next pass holds
        // again those still over one)
        let submit_limits = self.t.limits.as_ref().is_none_or(|l| l.submit_limits);
        let held: Vec<JobIdx> = self.t.limits.as_ref().map(|l| l.holding()).unwrap_or_default();
        let mut book = LimitBook::of(&new);
        if let Some(b) = &mut book {
            b.submit_limits = submit_limits;
            for &(j, t) in &tickets {
                let e = self.t.get(j);
                b.queued(j, &t, e.spec.procs, e.spec.mem_per_proc_mb, e.spec.estimate);
                if matches!(e.state, JobState::Running { .. } | JobState::Suspended { .. } | JobState::Ending { .. }) {
                    b.started(j);
                }
            }
        }
        self.t.limits = book.map(Box::new);
        for j in held {
            let closed = self.gates.closed(j);
            self.t.set_held(j, closed);
        }
        if let Machine::Nodes(m) = &mut self.m {
            m.set_qos_preemption(&new);
        }
        self.share = Some(Box::new(s));
        self.share_rekey();
        Ok(())
    }
}
