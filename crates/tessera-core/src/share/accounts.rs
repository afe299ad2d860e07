//! Accounts, associations and QOS: who may run under which account, with which
//! shares and limits (Slurm's association tree and QOS table, as `sacctmgr`
//! keeps them).
//!
//! The tree's nodes are associations: `root`, the accounts below it, and at the
//! leaves a user's association with an account. Usage is charged to a user's
//! association and counts for every account above it; shares are relative to
//! siblings. Names are kept as given; lookups are exact.

use crate::Time;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// An association's index in [`Accounts::assocs`] (0 is `root`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct AssocId(pub u32);

/// A QOS's index in [`Accounts::qos`] (0 is `normal`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct QosId(pub u16);

/// What a job is charged to and asks of the sharing policy: its user's
/// association, its QOS and its nice value. The driver resolves names into a
/// ticket with [`Accounts::ticket`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Ticket {
    pub assoc: AssocId,
    pub qos: QosId,
    /// Slurm's `--nice`: subtracted from the priority (negative only by an operator).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub nice: i32,
}

fn is_zero(x: &i32) -> bool {
    *x == 0
}

/// Trackable resources a limit can bound (`None`: no limit).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Tres {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mem_mb: Option<u64>,
}

impl Tres {
    pub fn is_none(&self) -> bool {
        self.cpu.is_none() && self.mem_mb.is_none()
    }
}

/// An association's limits (sacctmgr's names); `None`: none. Grp limits bound
/// the association and everything below it together; the others each job or
/// each user association.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Limits {
    /// GrpTRES: resources of running jobs below it, together.
    #[serde(default, skip_serializing_if = "Tres::is_none")]
    pub grp_tres: Tres,
    /// GrpJobs: running jobs below it, together.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub grp_jobs: Option<u32>,
    /// GrpSubmitJobs: queued and running jobs below it, together.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub grp_submit_jobs: Option<u32>,
    /// MaxJobs: running jobs of each user association below it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_jobs: Option<u32>,
    /// MaxSubmitJobs: queued and running jobs of each user association below it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_submit_jobs: Option<u32>,
    /// MaxWall: the longest time limit of a job (reference seconds).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_wall: Option<Time>,
    /// MaxTRESPerJob.
    #[serde(default, skip_serializing_if = "Tres::is_none")]
    pub max_tres_per_job: Tres,
}

/// A node of the association tree: an account, or a user's association with
/// an account.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Assoc {
    /// The account (for a user association: the account it charges).
    pub account: String,
    /// The user, for a user association.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub user: Option<String>,
    /// The parent account's association (None for root).
    pub parent: Option<AssocId>,
    /// Raw shares, relative to its siblings'.
    pub shares: u32,
    /// `Fairshare=parent`: it has no shares of its own. A user so marked
    /// ranks with the highest of its siblings (Level FS infinite); an account
    /// so marked lets its children compete as children of its parent.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub use_parent: bool,
    #[serde(default)]
    pub limits: Limits,
    /// QOS the association may use (empty: every QOS; a user association
    /// without a list inherits its account's).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub qos: Vec<QosId>,
    /// The QOS of a job that names none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default_qos: Option<QosId>,
}

impl Assoc {
    pub fn is_user(&self) -> bool {
        self.user.is_some()
    }

    /// `account` or `account/user`, as tables show it.
    pub fn label(&self) -> String {
        match &self.user {
            Some(u) => format!("{}/{}", self.account, u),
            None => self.account.clone(),
        }
    }
}

/// What a preempting QOS does to the jobs it preempts.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum QosPreemptMode {
    /// Suspended (they keep their memory and resume when the cores are free).
    Suspend,
    /// Killed and put back in the queue.
    Requeue,
}

/// A quality of service (sacctmgr's QOS).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Qos {
    pub name: String,
    /// Its priority (the QOS factor is this over the largest).
    pub priority: u32,
    /// Usage of its jobs counts this many times (UsageFactor).
    pub usage_factor: f64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_wall: Option<Time>,
    /// MaxTRESPerUser: running jobs of one user under this QOS, together.
    #[serde(default, skip_serializing_if = "Tres::is_none")]
    pub max_tres_per_user: Tres,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_jobs_per_user: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_submit_jobs_per_user: Option<u32>,
    /// GrpTRES: running jobs of this QOS, together.
    #[serde(default, skip_serializing_if = "Tres::is_none")]
    pub grp_tres: Tres,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub grp_jobs: Option<u32>,
    /// QOS whose running jobs this one's pending jobs may preempt.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub preempt: Vec<QosId>,
    /// How jobs of this QOS are preempted.
    pub preempt_mode: QosPreemptMode,
}

impl Qos {
    /// Slurm's `normal`: priority 0, no limits.
    pub fn normal() -> Qos {
        Qos {
            name: "normal".into(),
            priority: 0,
            usage_factor: 1.0,
            max_wall: None,
            max_tres_per_user: Tres::default(),
            max_jobs_per_user: None,
            max_submit_jobs_per_user: None,
            grp_tres: Tres::default(),
            grp_jobs: None,
            preempt: Vec::new(),
            preempt_mode: QosPreemptMode::Suspend,
        }
    }
}

/// The association tree and the QOS table.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Accounts {
    /// 0 is `root`; a parent comes before its children.
    pub assocs: Vec<Assoc>,
    /// 0 is `normal`.
    pub qos: Vec<Qos>,
    /// Each user's default account.
    pub defaults: BTreeMap<String, String>,
}

/// Why names do not make a ticket (the job is refused at submission).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum TicketError {
    #[error("unknown account {0}")]
    UnknownAccount(String),
    #[error("user {user} has no association with account {account}")]
    NoAssociation { user: String, account: String },
    #[error("user {0} has no association (and so no default account)")]
    NoDefaultAccount(String),
    #[error("unknown QOS {0}")]
    UnknownQos(String),
    #[error("QOS {qos} is not allowed for account {account}, user {user}")]
    QosNotAllowed { qos: String, account: String, user: String },
}

impl Default for Accounts {
    fn default() -> Self {
        Accounts::new()
    }
}

impl Accounts {
    /// Only `root` and the `normal` QOS.
    pub fn new() -> Accounts {
        Accounts {
            assocs: vec![Assoc { account: "root".into(), user: None, parent: None, shares: 1, use_parent: false, limits: Limits::default(), qos: Vec::new(), default_qos: None }],
            qos: vec![Qos::normal()],
            defaults: BTreeMap::new(),
        }
    }

    /// Each group an account under root and each (user, group) an association,
    /// all with one share: what the simulator uses for a trace without an
    /// accounts file. Names are `g<group>` and `u<user>`, as in the trace.
    pub fn from_groups(pairs: impl IntoIterator<Item = (i64, i64)>) -> Accounts {
        let mut a = Accounts::new();
        let mut pairs: Vec<(i64, i64)> = pairs.into_iter().collect();
        pairs.sort_unstable_by_key(|&(g, u)| (g, u));
        pairs.dedup();
        for (g, u) in pairs {
            let account = trace_group(g);
            let acct = match a.account(&account) {
                Some(id) => id,
                None => a.push(Assoc { account: account.clone(), user: None, parent: Some(AssocId(0)), shares: 1, use_parent: false, limits: Limits::default(), qos: Vec::new(), default_qos: None }),
            };
            let user = trace_user(u);
            a.defaults.entry(user.clone()).or_insert_with(|| account.clone());
            a.push(Assoc { account, user: Some(user), parent: Some(acct), shares: 1, use_parent: false, limits: Limits::default(), qos: Vec::new(), default_qos: None });
        }
        a
    }

    /// Add an association (its parent already there); returns its id.
    pub fn push(&mut self, a: Assoc) -> AssocId {
        self.assocs.push(a);
        AssocId(self.assocs.len() as u32 - 1)
    }

    pub fn get(&self, id: AssocId) -> &Assoc {
        &self.assocs[id.0 as usize]
    }

    /// An account's own association.
    pub fn account(&self, name: &str) -> Option<AssocId> {
        self.assocs.iter().position(|a| a.user.is_none() && a.account == name).map(|i| AssocId(i as u32))
    }

    /// A user's association with an account.
    pub fn user_assoc(&self, user: &str, account: &str) -> Option<AssocId> {
        self.assocs.iter().position(|a| a.user.as_deref() == Some(user) && a.account == account).map(|i| AssocId(i as u32))
    }

    pub fn qos_id(&self, name: &str) -> Option<QosId> {
        self.qos.iter().position(|q| q.name == name).map(|i| QosId(i as u16))
    }

    pub fn qos(&self, id: QosId) -> &Qos {
        &self.qos[id.0 as usize]
    }

    /// The user associations.
    pub fn users(&self) -> impl Iterator<Item = AssocId> + '_ {
        self.assocs.iter().enumerate().filter(|(_, a)| a.is_user()).map(|(i, _)| AssocId(i as u32))
    }

    /// An association and the accounts above it, up to root.
    pub fn lineage(&self, id: AssocId) -> impl Iterator<Item = AssocId> + '_ {
        std::iter::successors(Some(id), move |&a| self.get(a).parent)
    }

    /// Children of every association, in the order they were declared.
    pub fn children(&self) -> Vec<Vec<AssocId>> {
        let mut c = vec![Vec::new(); self.assocs.len()];
        for (i, a) in self.assocs.iter().enumerate() {
            if let Some(p) = a.parent {
                c[p.0 as usize].push(AssocId(i as u32));
            }
        }
        c
    }

    /// The QOS an association may use: its own list, else the nearest
    /// account's above it (empty: all).
    fn allowed_qos(&self, id: AssocId) -> &[QosId] {
        self.lineage(id).map(|a| &self.get(a).qos).find(|q| !q.is_empty()).map_or(&[], |v| v.as_slice())
    }

    /// The ticket of a job of `user`, under `account` (None: the user's
    /// default) and `qos` (None: the association's default, else `normal`).
    pub fn ticket(&self, user: &str, account: Option<&str>, qos: Option<&str>, nice: i32) -> Result<Ticket, TicketError> {
        let account = match account {
            Some(a) => a.to_string(),
            None => self.defaults.get(user).cloned().ok_or_else(|| TicketError::NoDefaultAccount(user.to_string()))?,
        };
        if self.account(&account).is_none() {
            return Err(TicketError::UnknownAccount(account));
        }
        let assoc = self.user_assoc(user, &account).ok_or_else(|| TicketError::NoAssociation { user: user.to_string(), account: account.clone() })?;
        let qos = match qos {
            Some(q) => self.qos_id(q).ok_or_else(|| TicketError::UnknownQos(q.to_string()))?,
            None => self.lineage(assoc).find_map(|a| self.get(a).default_qos).unwrap_or(QosId(0)),
        };
        let allowed = self.allowed_qos(assoc);
        if !allowed.is_empty() && !allowed.contains(&qos) {
            return Err(TicketError::QosNotAllowed { qos: self.qos(qos).name.clone(), account, user: user.to_string() });
        }
        Ok(Ticket { assoc, qos, nice })
    }

    /// Whether a ticket names an association and QOS of this table.
    pub fn valid(&self, t: &Ticket) -> bool {
        (t.assoc.0 as usize) < self.assocs.len() && self.get(t.assoc).is_user() && (t.qos.0 as usize) < self.qos.len()
    }
}

/// A trace group's account name.
pub fn trace_group(g: i64) -> String {
    format!("g{g}")
}

/// A trace user's name.
pub fn trace_user(u: i64) -> String {
    format!("u{u}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn groups_become_accounts_and_tickets_resolve() {
        let a = Accounts::from_groups([(2, 7), (1, 5), (2, 5), (1, 5)]);
        let labels: Vec<String> = a.assocs.iter().map(Assoc::label).collect();
        assert_eq!(labels, ["root", "g1", "g1/u5", "g2", "g2/u5", "g2/u7"]);
        assert_eq!(a.defaults["u5"], "g1");
        let t = a.ticket("u5", None, None, 0).unwrap();
        assert_eq!(a.get(t.assoc).label(), "g1/u5");
        assert_eq!(a.ticket("u5", Some("g2"), None, 0).unwrap().assoc, AssocId(4));
        assert_eq!(a.ticket("u7", Some("g1"), None, 0), Err(TicketError::NoAssociation { user: "u7".into(), account: "g1".into() }));
        assert_eq!(a.ticket("u9", None, None, 0), Err(TicketError::NoDefaultAccount("u9".into())));
        assert_eq!(a.ticket("u5", Some("g3"), None, 0), Err(TicketError::UnknownAccount("g3".into())));
        assert_eq!(a.ticket("u5", None, Some("high"), 0), Err(TicketError::UnknownQos("high".into())));
    }
}
