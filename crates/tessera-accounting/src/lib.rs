//! `tessera-accounting`: what a site reports about its capacity and its usage.
//!
//! * [`store`]: the accounting store (SQLite, numbered migrations, batched
//!   transactional writes) that simulations and the live controller write to.
//! * [`publish`]: installed capacity the way grid sites publish it (GLUE 2.0 LDIF,
//!   GLUE 1.3 attributes, YAIM `site-info.def` variables), with the scaling
//!   factors of every node type in both conventions (TORQUE and GLUE 2).

pub use tessera_core::civil;
pub mod natural;
pub mod publish;
pub mod store;
pub mod billing;
pub mod overhead;
mod timeline;
pub mod usage;
pub mod acct;
pub mod apel;
