//! `tessera cluster show` and `tessera publish`.

use crate::cli::{PublishArgs, PublishFormat, ShowArgs};
use crate::sim_cmd::{default_cluster, load_cluster};
use anyhow::Result;
use tessera_core::hostlist;

pub fn show(a: ShowArgs) -> Result<()> {
    let c = match &a.cluster {
        Some(p) => load_cluster(p)?,
        None => default_cluster(),
    };
    println!("cluster {}: {} nodes, {} cores, reference {}", c.name, c.nodes.len(), c.total_cores(), c.reference.name);
    println!(
        "{:<12} {:>6} {:>8} {:>6} {:>10} {:>5} {:>8} {:>7}  {:<20} nodes",
        "NODETYPE", "COUNT", "SOCKETS", "CORES", "MEMORY_MB", "GPUS", "SPEED", "FACTOR", "FEATURES"
    );
    for (i, t) in c.node_types.iter().enumerate() {
        let names: Vec<&str> = c.nodes.iter().filter(|n| n.node_type == i).map(|n| n.name.as_str()).collect();
        println!(
            "{:<12} {:>6} {:>8} {:>6} {:>10} {:>5} {:>8} {:>7}  {:<20} {}",
            t.name,
            names.len(),
            t.sockets,
            t.cores(),
            t.memory_mb,
            t.gpus,
            tessera_accounting::publish::num(t.speed, 3),
            tessera_accounting::publish::num(t.factor, 4),
            if t.features.is_empty() { "-".to_string() } else { t.features.join(",") },
            hostlist::compress(&names)
        );
    }
    println!("{:<12} {:>6} {:>8} {:>10}  {:<24} nodes", "PARTITION", "NODES", "DEFAULT", "ALLOCATION", "NODESET");
    for p in &c.partitions {
        let names: Vec<&str> = p.nodes.iter().map(|&i| c.nodes[i].name.as_str()).collect();
        println!(
            "{:<12} {:>6} {:>8} {:>10}  {:<24} {}",
            p.name,
            p.nodes.len(),
            if p.default { "yes" } else { "" },
            if p.exclusive { "exclusive" } else { "shared" },
            p.nodeset.as_ref().map_or("-".to_string(), |s| s.to_string()),
            hostlist::compress(&names)
        );
    }
    if let Some(ns) = &c.nodeset {
        println!("site node set: {ns} (optional {}, priority {}, plus {})", ns.optional, ns.priority, ns.plus);
    }
    Ok(())
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
    print!("{out}");
    Ok(())
}
