//! `tessera cluster show` and `tessera publish`.

use crate::out::out;
use crate::cli::{PublishArgs, PublishFormat, ShowArgs};
use tessera_studies::run::{default_cluster, load_cluster};
use anyhow::Result;

/// The cluster's node types, partitions and power (`tessera_report::cluster`).
pub fn show(a: ShowArgs) -> Result<()> {
    let c = match &a.cluster {
        Some(p) => load_cluster(p)?,
        None => default_cluster(),
    };
    out!("{}", tessera_report::cluster::cluster_text(&c))
}

pub fn publish(a: PublishArgs) -> Result<()> {
    let c = match &a.cluster {
        Some(p) => load_cluster(p)?,
        None => default_cluster(),
    };
    let cap = tessera_accounting::publish::capacity(&c);
    let out = match a.format {
        PublishFormat::Text => cap.text(),
        PublishFormat::Json => format!("{}\n", serde_json::to_string_pretty(&cap)?),
        PublishFormat::Glue2 => cap.glue2(),
        PublishFormat::Glue13 => cap.glue13(),
        PublishFormat::Yaim => cap.yaim(),
    };
    out!("{out}")?;
    Ok(())
}
