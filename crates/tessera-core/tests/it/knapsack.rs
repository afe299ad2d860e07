//! The structured PARM solver against brute force: on small random problems with
//! integer values, nodes and watts (exact in f64, so sums do not depend on their
//! order), every choice is enumerated and the structured solver must find the
//! optimum exactly and say so.

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use tessera_core::power::{Group, Item, Problem, Solver, Status};

/// A random problem: 1–8 groups of 1–5 items, about a third forced, integer data
/// (half of the groups shaped like PARM's: more nodes and watts worth more);
/// node and power limits a fraction of what the groups' largest items would take,
/// so that one or both constraints bind.
fn instance(seed: u64) -> Problem {
    let mut r = ChaCha8Rng::seed_from_u64(seed);
    let n_groups = r.gen_range(1..=8);
    // magnitudes like a real decision's too (values in the millions, watts in the
    // hundreds of thousands), still integers: exact, whatever the order of a sum
    let value_scale = [1u64, 1000, 1_000_000][r.gen_range(0..3)] as f64;
    let power_scale = [1u64, 1000][r.gen_range(0..2)] as f64;
    let mut groups = Vec::with_capacity(n_groups);
    let (mut max_n, mut max_w) = (0u32, 0f64);
    for _ in 0..n_groups {
        let n_items = r.gen_range(1..=5);
        let parm_like = r.gen_bool(0.5);
        let (base, weight, beta) = (r.gen_range(1..=4u32), r.gen_range(1..=9u32), r.gen_range(0..=3u32));
        let items: Vec<Item> = (0..n_items)
            .map(|_| {
                if parm_like {
                    // more nodes and a higher cap are worth more, with diminishing returns
                    let n = base * r.gen_range(1..=4u32);
                    let cap = [30u32, 36, 44, 60][r.gen_range(0..4)];
                    let value = weight * (2 * n - n * n / (8 * base)).max(1) + beta * (cap - 30) / 6;
                    Item { value: value as f64 * value_scale, nodes: n, power: (n * (cap + 56)) as f64 * power_scale }
                } else {
                    Item { value: r.gen_range(0..=40u32) as f64 * value_scale, nodes: r.gen_range(1..=10), power: r.gen_range(1..=300u32) as f64 * power_scale }
                }
            })
            .collect();
        max_n += items.iter().map(|i| i.nodes).max().unwrap();
        max_w += items.iter().map(|i| i.power).fold(0.0, f64::max);
        groups.push(Group { forced: r.gen_bool(0.3), items });
    }
    let nodes = (max_n as f64 * r.gen_range(0.25..0.9)) as u32;
    let power = (max_w * r.gen_range(0.25..0.9)).floor();
    Problem { groups, nodes, power }
}

/// Every choice, depth first, cut where the nodes or watts so far already exceed
/// the limits (all data are non-negative). The best objective is the same sum
/// the solver reports (`Problem::value`, in group order); None when no choice is
/// feasible.
fn brute_force(p: &Problem) -> Option<(f64, Vec<Option<u32>>)> {
    fn go(p: &Problem, g: usize, n: u32, w: f64, pick: &mut Vec<Option<u32>>, best: &mut Option<(f64, Vec<Option<u32>>)>) {
        if n > p.nodes || w > p.power {
            return;
        }
        if g == p.groups.len() {
            let v = p.value(pick);
            if best.as_ref().is_none_or(|b| v > b.0) {
                *best = Some((v, pick.clone()));
            }
            return;
        }
        if !p.groups[g].forced {
            pick.push(None);
            go(p, g + 1, n, w, pick, best);
            pick.pop();
        }
        for (i, it) in p.groups[g].items.iter().enumerate() {
            pick.push(Some(i as u32));
            go(p, g + 1, n + it.nodes, w + it.power, pick, best);
            pick.pop();
        }
    }
    let mut best = None;
    go(p, 0, 0, 0.0, &mut Vec::with_capacity(p.groups.len()), &mut best);
    best
}

/// What the problem would be worth without the two limits, and whether that
/// choice breaks the node limit and the power limit.
fn unconstrained(p: &Problem) -> (bool, bool) {
    let choice: Vec<Option<u32>> = p
        .groups
        .iter()
        .map(|g| (0..g.items.len() as u32).max_by(|&a, &b| g.items[a as usize].value.total_cmp(&g.items[b as usize].value).then(b.cmp(&a))))
        .collect();
    let (n, w, _) = p.usage(&choice);
    (n > p.nodes as u64, w > p.power)
}

fn check(seed: u64, p: &Problem) -> Option<(bool, bool)> {
    let best = brute_force(p);
    let s = p.solve(Solver::Structured, None);
    let Some((opt, opt_choice)) = best else {
        assert!(!p.usage(&s.choice).2, "seed {seed}: brute force finds no feasible choice, the solver found {:?} in {p:?}", s.choice);
        return None;
    };
    assert!(p.usage(&s.choice).2, "seed {seed}: infeasible answer {:?} to {p:?}", s.choice);
    assert_eq!(s.objective, p.value(&s.choice), "seed {seed}: the objective is the choice's value");
    assert!(s.objective == opt, "seed {seed}: structured {} ({:?}) vs brute force {opt} ({opt_choice:?}) on {p:?}", s.objective, s.choice);
    assert_eq!(s.status, Status::Optimal, "seed {seed}: optimal ({opt}) but not proven: bound {:?} on {p:?}", s.bound);
    assert!(s.bound.is_some_and(|b| b >= opt), "seed {seed}: bound {:?} below the optimum {opt}", s.bound);
    // with the optimum's own choice as the incumbent, and with a worse one
    let with = p.solve(Solver::Structured, Some(&opt_choice));
    assert!(with.objective == opt && with.status == Status::Optimal, "seed {seed}: with the optimum as incumbent: {} {:?}", with.objective, with.status);
    let worse: Vec<Option<u32>> = p.groups.iter().map(|g| g.forced.then(|| (0..g.items.len() as u32).min_by(|&a, &b| g.items[a as usize].power.total_cmp(&g.items[b as usize].power)).unwrap())).collect();
    if p.usage(&worse).2 {
        let with = p.solve(Solver::Structured, Some(&worse));
        assert!(with.objective == opt && with.status == Status::Optimal, "seed {seed}: with a poor incumbent: {} {:?} vs {opt}", with.objective, with.status);
    }
    Some(unconstrained(p))
}

#[test]
fn structured_solver_finds_the_brute_force_optimum_exactly() {
    // more with TESSERA_BRUTE_FORCE_CASES (a million take about a minute)
    let cases: u64 = std::env::var("TESSERA_BRUTE_FORCE_CASES").ok().and_then(|v| v.parse().ok()).unwrap_or(30_000);
    let (mut feasible, mut infeasible, mut node_bound, mut power_bound, mut both) = (0, 0, 0, 0, 0);
    for seed in 0..cases {
        let p = instance(seed);
        match check(seed, &p) {
            None => infeasible += 1,
            Some((n, w)) => {
                feasible += 1;
                node_bound += n as u32;
                power_bound += w as u32;
                both += (n && w) as u32;
            }
        }
    }
    eprintln!(
        "{cases} problems: {feasible} feasible (optimum found exactly and proven), {infeasible} infeasible; the best item per group breaks the node limit in {node_bound}, the power limit in {power_bound}, both in {both}"
    );
    // not vacuous: most problems have an answer, and the limits bind in most of them
    assert!(feasible >= cases * 3 / 4, "{feasible} of {cases} feasible");
    assert!(node_bound as u64 >= feasible / 3 && power_bound as u64 >= feasible / 3 && both > 0, "limits bind too rarely: nodes {node_bound}, power {power_bound}, both {both} of {feasible}");
}
