//! Job layouts as Slurm users ask them (`-N`, `--ntasks-per-node`, `-c`,
//! `--exclusive`, `-w`, `-x`): where the engine puts the tasks.

use tessera_core::{Allocation, Cluster, Effect, Engine, Input, JobId, JobSpec, NodeChoice, PolicyKind, Rejection, Shape};

const TWO: &str = "name = \"two\"\n[[nodetype]]\nname = \"a\"\nnodes = \"n[1-2]\"\ncores = 8\n[[nodetype]]\nname = \"b\"\nnodes = \"n3\"\ncores = 4\n[[partition]]\nname = \"p\"\nnodetypes = [\"a\", \"b\"]\ndefault = true\n";

fn engine() -> Engine {
    Engine::with_cluster(PolicyKind::Easy, &Cluster::from_toml(TWO, "two.toml").unwrap()).unwrap()
}

/// Submit a job of `tasks` × `shape.cpt()` processors and pass; where it
/// starts (None: it waits), or the submission's rejection.
fn place(e: &mut Engine, id: u64, tasks: u32, shape: Shape, nodes: NodeChoice) -> Result<Option<Allocation>, Rejection> {
    let spec = JobSpec { shape, ..JobSpec::new(JobId(id), tasks * shape.cpt(), 100) };
    let mut fx = Vec::new();
    e.handle(0, Input::submission(spec, None, Vec::new(), nodes), &mut fx);
    if let Some(Effect::Rejected { reason, .. }) = fx.iter().find(|f| matches!(f, Effect::Rejected { .. })) {
        return Err(reason.clone());
    }
    e.handle(0, Input::Pass, &mut fx);
    e.sanity_check();
    Ok(fx.into_iter().find_map(|f| match f {
        Effect::Start { job, alloc, .. } if job == JobId(id) => Some(alloc),
        _ => None,
    }))
}

fn layout(a: &Allocation) -> Vec<(u32, u32)> {
    a.parts.iter().map(|p| (p.node, p.cores)).collect()
}

fn n(nodes: u32) -> Shape {
    Shape { nodes, ..Shape::default() }
}

#[test]
fn an_exact_node_count_spreads_the_tasks_evenly() {
    let mut e = engine();
    assert_eq!(layout(&place(&mut e, 1, 4, n(2), NodeChoice::default()).unwrap().unwrap()), [(0, 2), (1, 2)]);
    let mut e = engine();
    assert_eq!(layout(&place(&mut e, 1, 3, n(2), NodeChoice::default()).unwrap().unwrap()), [(0, 2), (1, 1)]);
    // -N 1 alone: one task, one core (not the whole node)
    let mut e = engine();
    let a = place(&mut e, 1, 1, n(1), NodeChoice::default()).unwrap().unwrap();
    assert_eq!((layout(&a), a.procs), (vec![(0, 1)], 1));
    // nodes of different sizes: a node without room for its share is passed over
    let mut e = engine();
    assert_eq!(layout(&place(&mut e, 1, 15, n(2), NodeChoice::default()).unwrap().unwrap()), [(0, 8), (1, 7)]);
    // without a count, the engine packs as it always has
    let mut e = engine();
    assert_eq!(layout(&place(&mut e, 1, 3, Shape::default(), NodeChoice::default()).unwrap().unwrap()), [(0, 3)]);
}

#[test]
fn a_node_with_too_little_room_for_its_share_makes_the_job_wait() {
    let mut e = engine();
    // 7 of n1's cores busy
    assert_eq!(layout(&place(&mut e, 1, 7, Shape::default(), NodeChoice::default()).unwrap().unwrap()), [(0, 7)]);
    // 2 + 2 on two nodes: n1 has room for one only, so n2 and n3
    assert_eq!(layout(&place(&mut e, 2, 4, n(2), NodeChoice::default()).unwrap().unwrap()), [(1, 2), (2, 2)]);
    // three nodes of 4 tasks each: n1 cannot, and there is no fourth
    assert_eq!(place(&mut e, 3, 12, n(3), NodeChoice::default()).unwrap(), None);
}

#[test]
fn cores_per_task_tasks_per_node_and_whole_nodes() {
    // -c 4: a task's cores on one node; 3 tasks on 8-core nodes: 2 + 1
    let mut e = engine();
    let a = place(&mut e, 1, 3, Shape { cpus_per_task: 4, ..Shape::default() }, NodeChoice::default()).unwrap().unwrap();
    assert_eq!((layout(&a), a.procs), (vec![(0, 8), (1, 4)], 12));
    // --ntasks-per-node 2: 4 tasks on two nodes
    let mut e = engine();
    assert_eq!(layout(&place(&mut e, 1, 4, Shape { tasks_per_node: 2, ..Shape::default() }, NodeChoice::default()).unwrap().unwrap()), [(0, 2), (1, 2)]);
    // --exclusive: the whole node for one task, and no one else on it
    let mut e = engine();
    let a = place(&mut e, 1, 1, Shape { exclusive: true, ..Shape::default() }, NodeChoice::default()).unwrap().unwrap();
    assert_eq!((layout(&a), a.procs), (vec![(0, 8)], 1));
    assert_eq!(layout(&place(&mut e, 2, 1, Shape::default(), NodeChoice::default()).unwrap().unwrap()), [(1, 1)]);
    // a whole node needs all of it free
    assert_eq!(layout(&place(&mut e, 3, 1, Shape { exclusive: true, ..Shape::default() }, NodeChoice::default()).unwrap().unwrap()), [(2, 4)]);
    assert_eq!(place(&mut e, 4, 1, Shape { exclusive: true, ..Shape::default() }, NodeChoice::default()).unwrap(), None);
}

#[test]
fn named_nodes_are_used_and_excluded_nodes_are_not() {
    let mut e = engine();
    let on = |include: Vec<u32>, exclude: Vec<u32>| NodeChoice { include, exclude };
    assert_eq!(layout(&place(&mut e, 1, 2, n(1), on(vec![2], vec![])).unwrap().unwrap()), [(2, 2)]);
    assert_eq!(layout(&place(&mut e, 2, 2, Shape::default(), on(vec![], vec![0])).unwrap().unwrap()), [(1, 2)]);
    // both named: one task on each at least
    let mut e = engine();
    assert_eq!(layout(&place(&mut e, 1, 2, n(2), on(vec![0, 2], vec![])).unwrap().unwrap()), [(0, 1), (2, 1)]);
}

#[test]
fn a_layout_no_nodes_can_hold_is_refused_at_submission() {
    let mut e = engine();
    assert!(matches!(place(&mut e, 1, 4, n(4), NodeChoice::default()), Err(Rejection::NeverFits { .. })));
    assert!(matches!(place(&mut e, 2, 1, n(2), NodeChoice::default()), Err(Rejection::InvalidSpec { .. })));
    assert!(matches!(place(&mut e, 3, 5, n(1), NodeChoice { include: vec![2], exclude: vec![] }), Err(Rejection::NeverFits { .. })));
    let every = NodeChoice { include: vec![], exclude: vec![0, 1, 2] };
    assert!(matches!(place(&mut e, 4, 1, Shape::default(), every), Err(Rejection::NeverFits { .. })));
}

/// A time limit above the partition's MaxTime can never run there (Slurm's
/// PartitionTimeLimit): the engine refuses it, whoever drives it; one at
/// MaxTime runs.
#[test]
fn a_limit_above_the_partitions_max_time_is_refused_at_submission() {
    let c = Cluster::from_toml(&TWO.replace("default = true\n", "default = true\nmax_time = \"01:40\"\n"), "two.toml").unwrap();
    let mut e = Engine::with_cluster(PolicyKind::Easy, &c).unwrap();
    assert!(place(&mut e, 1, 1, Shape::default(), NodeChoice::default()).unwrap().is_some(), "100 s is MaxTime exactly");
    let spec = JobSpec::new(JobId(2), 1, 101);
    let mut fx = Vec::new();
    e.handle(0, Input::submit(spec), &mut fx);
    let why = fx.iter().find_map(|f| match f {
        Effect::Rejected { reason: Rejection::NeverFits { why, .. }, .. } => Some(*why),
        _ => None,
    });
    assert_eq!(why, Some("its time limit is above its partition's MaxTime (PartitionTimeLimit)"));
}
