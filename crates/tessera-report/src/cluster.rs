//! A cluster file's summary as `tessera cluster show` prints it: node types,
//! partitions, the site's node set, power; names as `tessera_core::quote::text`
//! shows them (control characters escaped).

use std::fmt::Write;
use tessera_core::{hostlist, Cluster};

/// The cluster's node types, partitions and power, one table each.
pub fn cluster_text(c: &Cluster) -> String {
    let q = tessera_core::quote::text;
    let mut o = String::new();
    writeln!(o, "cluster {}: {} nodes, {} cores, reference {}", q(&c.name), c.nodes.len(), c.total_cores(), q(&c.reference.name)).unwrap();
    writeln!(o, 
        "{:<12} {:>6} {:>8} {:>6} {:>10} {:>5} {:>8} {:>7}  {:<20} nodes",
        "NODETYPE", "COUNT", "SOCKETS", "CORES", "MEMORY_MB", "GPUS", "SPEED", "FACTOR", "FEATURES"
    ).unwrap();
    // the nodes of each type, in one pass over the nodes (not one per type)
    let mut by_type: Vec<Vec<&str>> = vec![Vec::new(); c.node_types.len()];
    for n in &c.nodes {
        by_type[n.node_type].push(n.name.as_str());
    }
    for (t, names) in c.node_types.iter().zip(&by_type) {
        writeln!(o, 
            "{:<12} {:>6} {:>8} {:>6} {:>10} {:>5} {:>8} {:>7}  {:<20} {}",
            q(&t.name),
            names.len(),
            t.sockets,
            t.cores(),
            t.memory_mb,
            t.gpus,
            tessera_accounting::publish::num(t.speed, 3),
            tessera_accounting::publish::num(t.factor, 4),
            if t.features.is_empty() { "-".to_string() } else { q(&t.features.join(",")).into_owned() },
            q(&hostlist::compress(&names))
        ).unwrap();
    }
    writeln!(o, "{:<12} {:>6} {:>8} {:>10}  {:<24} nodes", "PARTITION", "NODES", "DEFAULT", "ALLOCATION", "NODESET").unwrap();
    for p in &c.partitions {
        let names: Vec<&str> = p.nodes.iter().map(|&i| c.nodes[i].name.as_str()).collect();
        writeln!(o, 
            "{:<12} {:>6} {:>8} {:>10}  {:<24} {}",
            q(&p.name),
            p.nodes.len(),
            if p.default { "yes" } else { "" },
            if p.exclusive { "exclusive" } else { "shared" },
            p.nodeset.as_ref().map_or("-".to_string(), |s| q(&s.to_string()).into_owned()),
            q(&hostlist::compress(&names))
        ).unwrap();
    }
    if let Some(ns) = &c.nodeset {
        writeln!(o, "site node set: {} (optional {}, priority {}, plus {})", q(&ns.to_string()), ns.optional, ns.priority, ns.plus).unwrap();
    }
    for t in &c.node_types {
        if let Some(pw) = &t.power {
            let caps: Vec<String> = pw.cap_levels_w.iter().map(|w| w.to_string()).collect();
            writeln!(o, 
                "power {}: base {} W + memory {} W + CPU up to {} W (caps {} W) per busy node; idle {} W",
                q(&t.name),
                pw.base_w,
                pw.memory_w,
                pw.cpu_max_w,
                caps.join(", "),
                pw.idle_w
            ).unwrap();
        }
    }
    if let Some(b) = c.power_budget_w {
        match c.power_machine() {
            Ok(info) => {
                let full = info.cpu_max_w + info.machine.node_base_w;
                let low = info.machine.cap_levels_w[0] + info.machine.node_base_w;
                writeln!(o, 
                    "power budget {b} W: {} nodes at full power ({full} W each), {} at the lowest cap ({low} W), of {}",
                    ((b / full).floor() as u64).min(info.machine.nodes as u64),
                    ((b / low).floor() as u64).min(info.machine.nodes as u64),
                    info.machine.nodes
                ).unwrap();
            }
            Err(e) => writeln!(o, "power budget {b} W: not usable for power-aware scheduling: {e}").unwrap(),
        }
    }
    o
}
