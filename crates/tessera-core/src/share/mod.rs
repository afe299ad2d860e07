//! Sharing a cluster: accounts and associations, Fair Tree fair share,
//! multifactor priority, QOS and limits.

mod accounts;
mod config;
mod engine;
mod fairtree;
mod limits;
mod priority;
mod state;

pub use accounts::{trace_group, trace_user, Accounts, Assoc, AssocId, Limits, Qos, QosId, QosPreemptMode, Ticket, TicketError, Tres};
pub use fairtree::{fair_tree, FsRow};
pub use priority::{Factors, PriorityConfig, PriorityKind, UsageUnit, Weights};
pub use engine::{ShareView, SharingError};
pub(crate) use state::Sharing;
pub use config::SharingConfig;
pub use limits::LimitReason;
pub(crate) use limits::LimitBook;
