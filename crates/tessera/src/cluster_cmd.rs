//! `tessera cluster show`.

use crate::cli::ShowArgs;
use crate::sim_cmd::{default_cluster, load_cluster};
use anyhow::Result;
use tessera_core::hostlist;

pub fn show(a: ShowArgs) -> Result<()> {
    let c = match &a.cluster {
        Some(p) => load_cluster(p)?,
        None => default_cluster(),
    };
    println!("cluster {}: {} nodes, {} cores", c.name, c.nodes.len(), c.total_cores());
    println!("{:<12} {:>6} {:>8} {:>6} {:>10} {:>5}  nodes", "NODETYPE", "COUNT", "SOCKETS", "CORES", "MEMORY_MB", "GPUS");
    for (i, t) in c.node_types.iter().enumerate() {
        let names: Vec<&str> = c.nodes.iter().filter(|n| n.node_type == i).map(|n| n.name.as_str()).collect();
        println!(
            "{:<12} {:>6} {:>8} {:>6} {:>10} {:>5}  {}",
            t.name, names.len(), t.sockets, t.cores(), t.memory_mb, t.gpus, hostlist::compress(&names)
        );
    }
    println!("{:<12} {:>6} {:>8}  nodes", "PARTITION", "NODES", "DEFAULT");
    for p in &c.partitions {
        let names: Vec<&str> = p.nodes.iter().map(|&i| c.nodes[i].name.as_str()).collect();
        println!("{:<12} {:>6} {:>8}  {}", p.name, p.nodes.len(), if p.default { "yes" } else { "" }, hostlist::compress(&names));
    }
    Ok(())
}
