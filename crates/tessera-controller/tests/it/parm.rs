//! The power-aware policy live, at the controller's layer: PARM's decisions
//! become caps on the nodes, launches told their node count and cap, and
//! reconfigurations of running jobs; the power options are PARM's alone.

use crate::state_env::{user, StateEnv};
use tessera_controller::state::Action;
use tessera_core::{Cluster, Engine, PolicyKind};

fn testbed() -> StateEnv {
    let cluster = Cluster::from_toml(include_str!("../../../../examples/clusters/parm-testbed.toml"), "parm-testbed.toml").unwrap();
    let info = cluster.power_machine().unwrap();
    StateEnv::on(cluster, Engine::parm(info.machine, tessera_controller::parm_defaults()))
}

/// The caps set on nodes, in order: (node, cap, busy).
fn caps(actions: &[Action]) -> Vec<(u32, f64, bool)> {
    actions.iter().filter_map(|a| if let Action::Power { node, cap_w, busy } = a { Some((*node, *cap_w, *busy)) } else { None }).collect()
}

#[test]
fn a_moldable_job_starts_capped_on_the_nodes_chosen_and_is_told_so() {
    let mut env = testbed();
    let u = user("ann", 1000);
    let ids = env.submit(&u, &[("--moldable", "4-12"), ("--power-profile", "Jacobi2D"), ("--time", "30:00")], None).unwrap();
    let launch = env.actions.iter().find_map(|a| if let Action::Launch { launch, .. } = a { Some(launch.clone()) } else { None }).expect("the job starts");
    assert_eq!(launch.job, ids[0]);
    let (n, cap) = env.state.engine().power_config(tessera_core::JobId(ids[0])).unwrap();
    assert!((4..=12).contains(&n), "{n} nodes");
    assert_eq!(launch.env["SLURM_NNODES"], n.to_string());
    assert_eq!(launch.env["SLURM_JOB_NUM_NODES"], n.to_string());
    assert_eq!(launch.env["TESSERA_POWER_CAP_W"], cap.to_string());
    assert_eq!(tessera_core::hostlist::expand(&launch.env["SLURM_JOB_NODELIST"]).unwrap().len() as u32, n);
    // every node of the job is capped before the launch, which goes to its first
    let at_launch = env.actions.iter().position(|a| matches!(a, Action::Launch { .. })).unwrap();
    let before = caps(&env.actions[..at_launch]);
    assert_eq!(before.len() as u32, n, "{before:?}");
    assert!(before.iter().all(|&(_, c, busy)| c == cap && busy));
    let Action::Launch { node: first, .. } = &env.actions[at_launch] else { unreachable!() };
    assert_eq!(*first, before[0].0);
    // the job ends: its nodes idle again, its record carries its energy
    env.actions.clear();
    env.at(600).exit(ids[0], 0);
    let after = caps(&env.actions);
    assert_eq!(after.len() as u32, n);
    assert!(after.iter().all(|&(_, _, busy)| !busy));
    let rec = env.actions.iter().find_map(|a| if let Action::Record(r) = a { Some(r.clone()) } else { None }).expect("a record");
    let e = rec.energy_j.expect("the record carries the job's energy");
    // n nodes at (cap + 56 W) for 600 s, as the model draws them
    assert!((e - n as f64 * (cap + 56.0) * 600.0).abs() < 1.0, "{e} J");
}

#[test]
fn a_second_job_reconfigures_the_malleable_one_and_it_is_told() {
    let mut env = testbed();
    let u = user("ann", 1000);
    let a = env.submit(&u, &[("--moldable", "8-38"), ("--malleable", ""), ("--power-profile", "LeanMD"), ("--time", "2:00:00")], None).unwrap()[0];
    let (n0, _) = env.state.engine().power_config(tessera_core::JobId(a)).unwrap();
    env.actions.clear();
    let b = env.at(10).submit(&u, &[("--moldable", "8-20"), ("--power-profile", "Wave2D"), ("--time", "1:00:00")], None).unwrap()[0];
    let (n1, cap1) = env.state.engine().power_config(tessera_core::JobId(a)).unwrap();
    // the second job waits for the nodes the first gives up until it says it
    // runs without them
    assert!(env.state.engine().power_config(tessera_core::JobId(b)).is_none(), "the second job waits for the acknowledgement");
    assert!(env.state.engine().awaits_resize(tessera_core::JobId(a)));
    let attempt = env.state.ledger.jobs[&a].attempt;
    env.at(12).apply(vec![tessera_controller::state::Event::Resized { job: a, attempt }]);
    assert!(env.state.engine().power_config(tessera_core::JobId(b)).is_some(), "the second job starts once the first acknowledged");
    assert!(!env.state.engine().awaits_resize(tessera_core::JobId(a)));
    let re = env.actions.iter().find_map(|x| if let Action::Reconfigure { job, nodes, cap_w, .. } = x { (*job == a).then(|| (nodes.clone(), *cap_w)) } else { None });
    // the first job had the machine: it gives the second room, and is told
    assert!(n1 < n0, "{n0} -> {n1} nodes");
    let (nodes, cap) = re.expect("the running job is told its new configuration");
    assert_eq!((nodes.len() as u32, cap), (n1, cap1));
    assert_eq!(nodes, env.state.ledger.jobs[&a].nodes);
    // no node is held by both, and the caps the two jobs' nodes were given are theirs
    let na = &env.state.ledger.jobs[&a].nodes;
    let nb = &env.state.ledger.jobs[&b].nodes;
    assert!(na.iter().all(|n| !nb.contains(n)), "{na:?} {nb:?}");
}

#[test]
fn the_power_options_are_the_power_aware_policys() {
    let mut env = StateEnv::new(PolicyKind::Easy);
    let e = env.submit(&user("ann", 1000), &[("--moldable", "2-4")], None).unwrap_err();
    assert_eq!(e.status, 400);
    assert!(e.body.error.contains("--policy parm"), "{:?}", e.body);
    let mut env = testbed();
    let e = env.submit(&user("ann", 1000), &[("--malleable", "")], None).unwrap_err();
    assert!(e.body.error.contains("--moldable MIN-MAX as well"), "{:?}", e.body);
    let e = env.submit(&user("ann", 1000), &[("--power-profile", "HPL")], None).unwrap_err();
    assert!(e.body.error.contains("LeanMD, Wave2D, Lulesh, AMR, Jacobi2D, none"), "{:?}", e.body);
    let e = env.submit(&user("ann", 1000), &[("--moldable", "4-40")], None).unwrap_err();
    assert!(e.body.error.contains("MIN <= MAX <= 38"), "{:?}", e.body);
    let e = env.submit(&user("ann", 1000), &[("--moldable", "2-4"), ("--time", "UNLIMITED")], None).unwrap_err();
    assert!(e.body.error.contains("a run time estimate"), "{:?}", e.body);
    // a job that says nothing of its power runs rigid at full power
    let id = env.submit(&user("ann", 1000), &[("-N", "3")], None).unwrap()[0];
    let (n, cap) = env.state.engine().power_config(tessera_core::JobId(id)).unwrap();
    assert_eq!(n, 3);
    assert_eq!(cap, 60.0, "uncapped: the CPU's maximum");
}

/// A decision's solve time, journaled after it (`--charge-solve-time`), is
/// charged to the job it started: the job hears its later end, and a
/// controller replaying the journal charges the same.
#[test]
fn a_charged_decision_time_moves_the_started_jobs_end_and_tells_it() {
    let mut env = testbed();
    let u = user("ann", 1000);
    let id = env.submit(&u, &[("--moldable", "4-12"), ("--power-profile", "Jacobi2D"), ("--time", "30:00")], None).unwrap()[0];
    let launch = env.actions.iter().find_map(|a| if let Action::Launch { launch, .. } = a { Some(launch.clone()) } else { None }).expect("the job starts");
    let end: i64 = launch.env["TESSERA_POWER_END"].parse().unwrap();
    assert!(env.state.engine().as_parm().unwrap().decided(), "the pass started a job");
    env.actions.clear();
    env.apply(vec![tessera_controller::state::Event::DecisionTime { micros: 2_500_000 }, tessera_controller::state::Event::PassLater]);
    let told = env.actions.iter().find_map(|a| if let Action::Reconfigure { job, end, .. } = a { Some((*job, *end)) } else { None });
    assert_eq!(told, Some((id, end + 3)), "2.5 s more, to the whole second: {:?}", env.actions);
    assert_eq!(env.state.engine().power_end(tessera_core::JobId(id)), Some(end + 3));
    // a second charge has nothing to move: the decision was charged
    env.actions.clear();
    env.apply(vec![tessera_controller::state::Event::DecisionTime { micros: 2_500_000 }, tessera_controller::state::Event::PassLater]);
    assert!(env.actions.is_empty(), "{:?}", env.actions);
}

/// The power governor's cut, journaled as `Event::Throttle`: the job's nodes
/// are capped lower, the job is told its new cap and end, and a cut for an
/// earlier run of the job changes nothing.
#[test]
fn a_throttle_caps_the_jobs_nodes_lower_and_tells_it() {
    let mut env = testbed();
    let u = user("ann", 1000);
    let id = env.submit(&u, &[("--moldable", "4-4"), ("--power-profile", "LeanMD"), ("--time", "30:00")], None).unwrap()[0];
    let (n, cap) = env.state.engine().power_config(tessera_core::JobId(id)).unwrap();
    assert!(cap > 34.0, "LeanMD runs above 34 W alone: {cap}");
    env.actions.clear();
    env.apply(vec![tessera_controller::state::Event::Throttle { job: id, attempt: 2, cap_w: 30.0 }]);
    assert!(caps(&env.actions).is_empty(), "another run's cut: {:?}", env.actions);
    env.apply(vec![tessera_controller::state::Event::Throttle { job: id, attempt: 1, cap_w: 34.0 }]);
    let set = caps(&env.actions);
    assert_eq!(set.len() as u32, n, "{:?}", env.actions);
    assert!(set.iter().all(|&(_, c, busy)| c == 34.0 && busy));
    assert!(env.actions.iter().any(|a| matches!(a, Action::Reconfigure { job, cap_w, .. } if *job == id && *cap_w == 34.0)), "{:?}", env.actions);
    assert_eq!(env.state.engine().power_config(tessera_core::JobId(id)), Some((n, 34.0)));
}
