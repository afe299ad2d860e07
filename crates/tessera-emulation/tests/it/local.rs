//! Which agent of a local cluster presents which nodes.

use tessera_emulation::local::agents_plan;

fn cluster(nodes: usize) -> tessera_core::Cluster {
    let text = format!("name = \"t\"\n[[nodetype]]\nname = \"t\"\nnodes = \"n[1-{nodes}]\"\ncores = 4\n");
    tessera_core::Cluster::from_toml(&text, "t.toml").unwrap()
}

/// A new state directory shares the nodes evenly; later starts keep each
/// agent's nodes, nodes a changed cluster adds go to one new agent, and nodes
/// it removes leave theirs.
#[test]
fn agents_keep_their_nodes_across_starts() {
    let dir = tempfile::tempdir().unwrap();
    let first = agents_plan(dir.path(), &cluster(6), 2).unwrap();
    let names = |p: &[(String, Vec<String>)]| p.iter().map(|(a, n)| format!("{a}:{}", n.join(","))).collect::<Vec<_>>();
    assert_eq!(names(&first), ["agent1:n1,n2,n3", "agent2:n4,n5,n6"]);
    assert_eq!(agents_plan(dir.path(), &cluster(6), 5).unwrap(), first, "kept, whatever the count asked");
    assert_eq!(names(&agents_plan(dir.path(), &cluster(8), 2).unwrap()), ["agent1:n1,n2,n3", "agent2:n4,n5,n6", "agent3:n7,n8"]);
    assert_eq!(names(&agents_plan(dir.path(), &cluster(2), 2).unwrap()), ["agent1:n1,n2"]);
}
