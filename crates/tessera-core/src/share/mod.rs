//! Sharing a cluster: accounts and associations, Fair Tree fair share,
//! multifactor priority, QOS and limits.

mod accounts;
mod config;
mod edit;
mod engine;
mod fairtree;
mod limits;
mod priority;
pub mod sacctmgr;
mod state;

pub use accounts::{trace_group, trace_user, Accounts, Assoc, AssocId, Limits, Qos, QosId, QosPreemptMode, Ticket, TicketError, Tres};
pub use fairtree::{fair_tree, FsRow};
pub use priority::{Factors, PriorityConfig, PriorityKind, UsageUnit, Weights};
pub use engine::{PastJob, ShareView, SharingError};
pub(crate) use state::Sharing;
pub use config::SharingConfig;
pub use limits::LimitReason;
pub(crate) use limits::LimitBook;

/// The check of limits a job could never meet, for an accounts table that
/// sets any: (ticket, processors, MiB per processor, time limit) → the limit.
pub fn never_met_checker(acc: &Accounts) -> Option<impl Fn(&Ticket, u32, u64, crate::Time) -> Option<LimitReason>> {
    let book = LimitBook::of(acc)?;
    Some(move |t: &Ticket, procs: u32, mem: u64, est: crate::Time| book.never_met(t, procs, mem, est))
}
