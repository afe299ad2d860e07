//! `tessera-report`: how Tessera shows its results. Tables in four renderings,
//! charts drawn with plotters as SVG, and self-contained HTML pages: the report
//! of a recorded run, the comparison of several simulations, a sweep's report
//! and the live dashboard; the live system's listings (queue, nodes, a job) and
//! a cluster file's summary as the CLI prints them. The CLI and the controller
//! only gather the data.

pub mod acct;
pub mod chart;
pub mod cluster;
pub mod dashboard;
pub mod html;
pub mod live;
pub mod run;
pub mod series;
pub mod study;
pub mod table;

pub use chart::{Chart, Series};
pub use html::{Block, Page};
pub use table::{Table, TableFormat};

#[derive(Debug, thiserror::Error)]
pub enum ReportError {
    #[error(transparent)]
    Store(#[from] tessera_accounting::store::StoreError),
}
