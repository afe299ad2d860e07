use tessera_core::PolicyKind;
use tessera_sim::workload::{default_capacity, prepare};
use tessera_workload::swf::SwfReader;
fn main() {
    let path = std::env::args().nth(1).unwrap();
    let limit: usize = std::env::args().nth(2).unwrap().parse().unwrap();
    let (h, mut r, _) = SwfReader::read_file(std::path::Path::new(&path), false).unwrap();
    r.truncate(limit);
    let w = prepare(&r, default_capacity(&h, "x").unwrap());
    for p in [PolicyKind::Fcfs, PolicyKind::Easy, PolicyKind::Conservative] {
        let a = tessera_sim::simulate(&w, p);
        let b = tessera_sim::reference::simulate_reference(&w, p);
        let diff = a.start.iter().zip(&b.start).filter(|(x, y)| x != y).count();
        let first = a.start.iter().zip(&b.start).position(|(x, y)| x != y);
        println!("{p}: {diff} differing starts, first at {first:?}");
    }
}
