use tessera_core::PolicyKind;
use tessera_sim::workload::{default_capacity, prepare};
use tessera_workload::swf::SwfReader;
fn main() {
    let path = std::env::args().nth(1).unwrap();
    let limit: usize = std::env::args().nth(2).unwrap().parse().unwrap();
    let naive = std::env::args().nth(3).is_some();
    let (h, mut r, _) = SwfReader::read_file(std::path::Path::new(&path), false).unwrap();
    r.truncate(limit);
    let w = prepare(&r, default_capacity(&h, "x").unwrap());
    for p in [PolicyKind::Fcfs, PolicyKind::Easy, PolicyKind::Conservative] {
        let t = std::time::Instant::now();
        let o = if naive { tessera_sim::reference::simulate_reference(&w, p) } else { tessera_sim::simulate(&w, p) };
        println!("{p} {:.3}s passes {} maxq {}", t.elapsed().as_secs_f64(), o.passes, o.max_queue);
        if naive && p == PolicyKind::Easy { break; }
    }
}
