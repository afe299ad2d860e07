//! The power governor: what the controller does when the power its nodes
//! measure exceeds the budget. The scheduler keeps what it allocates within
//! the budget, but a node may draw more than its model says (a RAPL limit
//! overshoots, an application draws more memory power than the model's,
//! a node's power domain failed). EAR's cluster powercap (EARGM) answers by
//! lowering node power limits until the total is back under the limit; so
//! does Tessera, job by job: the jobs whose nodes draw most over what was
//! allocated to them lose one cap level each, most over-drawing first, until
//! what the lower caps save covers the excess. A job is never held below its
//! floor (the lowest cap its profile allows). Each cut is journaled
//! (`Event::Throttle`), logged and counted (`tessera_power_throttles_total`),
//! and the engine holds the job to it for the rest of its run
//! (`Input::CapCeiling`), so PARM's later decisions respect it.

/// A running job as the governor sees it.
#[derive(Debug, Clone, PartialEq)]
pub struct Drawing {
    pub job: u64,
    pub attempt: u32,
    /// Its nodes' CPU cap now, and the lowest it may be held to (W).
    pub cap_w: f64,
    pub floor_w: f64,
    /// The cap levels of its nodes (ascending).
    pub levels: Vec<f64>,
    /// Nodes, what they measured and what was allocated to them (W).
    pub nodes: u32,
    pub measured_w: f64,
    pub allocated_w: f64,
}

/// The cuts that bring `measured_w` back under `budget_w`: (job, attempt,
/// new cap), most over-drawing jobs first (then the most drawing, then the
/// lowest id), one level each; as many as it takes, or every job that can
/// still come down.
pub fn cuts(budget_w: f64, measured_w: f64, jobs: &[Drawing]) -> Vec<(u64, u32, f64)> {
    let mut excess = measured_w - budget_w;
    if excess <= 0.0 {
        return Vec::new();
    }
    let mut order: Vec<&Drawing> = jobs.iter().collect();
    order.sort_by(|a, b| {
        let over = |d: &Drawing| d.measured_w - d.allocated_w;
        over(b).total_cmp(&over(a)).then(b.measured_w.total_cmp(&a.measured_w)).then(a.job.cmp(&b.job))
    });
    let mut out = Vec::new();
    for d in order {
        if excess <= 0.0 {
            break;
        }
        // the next level down, not below the floor
        let Some(&lower) = d.levels.iter().rev().find(|&&p| p < d.cap_w - 1e-9 && p >= d.floor_w - 1e-9) else { continue };
        excess -= (d.cap_w - lower) * d.nodes as f64;
        out.push((d.job, d.attempt, lower));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn job(job: u64, cap_w: f64, nodes: u32, measured_w: f64, allocated_w: f64) -> Drawing {
        Drawing { job, attempt: 1, cap_w, floor_w: 32.0, levels: vec![30.0, 32.0, 34.0, 39.0, 45.0, 55.0, 60.0], nodes, measured_w, allocated_w }
    }

    #[test]
    fn nothing_is_cut_under_the_budget() {
        assert!(cuts(1000.0, 999.0, &[job(1, 60.0, 4, 500.0, 464.0)]).is_empty());
    }

    #[test]
    fn the_most_over_drawing_job_loses_a_level_first() {
        // job 2 draws 60 W over what it was given, job 1 36 W: 40 W too much
        let jobs = [job(1, 60.0, 4, 500.0, 464.0), job(2, 55.0, 4, 504.0, 444.0)];
        assert_eq!(cuts(964.0, 1004.0, &jobs), vec![(2, 1, 45.0)], "4 nodes from 55 W to 45 W save 40 W");
        // 100 W too much: job 2's cut saves 40 W, job 1's (60 to 55 W) 20 W more, still short:
        // every job that can come down does, once each round
        assert_eq!(cuts(904.0, 1004.0, &jobs), vec![(2, 1, 45.0), (1, 1, 55.0)]);
    }

    #[test]
    fn a_job_at_its_floor_is_passed_over() {
        let jobs = [job(1, 32.0, 8, 900.0, 700.0), job(2, 39.0, 2, 200.0, 190.0)];
        assert_eq!(cuts(1000.0, 1100.0, &jobs), vec![(2, 1, 34.0)], "job 1 is at its floor (32 W)");
    }
}
