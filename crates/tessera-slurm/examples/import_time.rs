//! Time one slurm.conf import (reading and mapping, without file output):
//! `cargo run --release -p tessera-slurm --example import_time -- FILE [OUT]`
//! prints the node and note counts and the time; OUT gets the cluster file
//! and the notes' report, to compare two builds' output byte for byte.
//! BENCHMARKS.md ("slurm.conf import in linear time") uses it.

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let Some(path) = args.get(1) else {
        eprintln!("usage: import_time FILE [OUT]");
        std::process::exit(2);
    };
    let text = match std::fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) => {
            eprintln!("{path}: {e}");
            std::process::exit(1);
        }
    };
    let t = std::time::Instant::now();
    let load = move |n: &str| if n == "slurm.conf" { Ok(text.clone()) } else { Err("no such file".to_string()) };
    let imported = tessera_slurm::conf::read("slurm.conf", &load).and_then(|l| tessera_slurm::site::import(&l, None, "out.toml"));
    let took = t.elapsed();
    match imported {
        Ok(i) => {
            if let Some(out) = args.get(2) {
                if let Err(e) = std::fs::write(out, format!("{}\n{}", i.toml, tessera_slurm::site::report(&i.notes))) {
                    eprintln!("{out}: {e}");
                    std::process::exit(1);
                }
            }
            println!("{} nodes, {} partitions, {} notes: {:.3} s", i.cluster.nodes.len(), i.cluster.partitions.len(), i.notes.len(), took.as_secs_f64());
        }
        Err(e) => {
            eprintln!("{e}");
            std::process::exit(1);
        }
    }
}
