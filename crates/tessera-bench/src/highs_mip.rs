//! HiGHS, the independent exact solver that checks Tessera's PARM optimizer from
//! outside (`tessera power bench` and the cross-check test).
//!
//! HiGHS reads the decision from the MPS file Tessera wrote
//! ([`Problem::to_mps`]), so what it checks is the exported file too, not a model
//! built beside it. It runs single-threaded, with both MIP gaps at 0 so that
//! "optimal" means proven optimal, and is deterministic for a given file.
//! HiGHS is C++, built from source by `highs-sys` (cmake, libclang): it stays out
//! of `tessera-core`, which the live system runs, and is in a build only with the
//! cargo feature `highs`; without it [`solve`] is an error that says how to build it in.

use anyhow::Result;
#[cfg(feature = "highs")]
use anyhow::{bail, ensure, Context};
use std::path::Path;
use tessera_core::power::Problem;

/// How to get HiGHS into a build.
pub const HOW: &str = "rebuild with `--features highs` (cargo build --release --features highs; HiGHS is built from source and needs cmake and libclang-dev)";

/// `Ok` when this build has HiGHS, else an error saying that `what` needs it
/// and how to build it in.
pub fn require(what: &str) -> Result<()> {
    if cfg!(feature = "highs") {
        Ok(())
    } else {
        anyhow::bail!("{what} needs HiGHS, which is not in this build: {HOW}")
    }
}

/// HiGHS's answer to one decision.
#[derive(Clone, Debug)]
pub struct Exact {
    /// The item chosen for each group (a binary above 1/2 is taken as chosen).
    pub choice: Vec<Option<u32>>,
    /// Σ value of `choice`, summed as Tessera sums (`Problem::value`).
    pub objective: f64,
    /// HiGHS's own objective value (from its fractional column values).
    pub highs_objective: f64,
    /// HiGHS proved the answer optimal (gap 0).
    pub optimal: bool,
    /// HiGHS's model status, for reports.
    pub status: String,
    /// Seconds HiGHS spent solving (reading the file not included).
    pub solve_s: f64,
}

/// Solve the MPS file `mps` (written by `p.to_mps(..)`) with HiGHS; the answer's
/// choice is mapped back onto `p`'s groups. `time_limit_s`: HiGHS's wall-clock
/// limit (then `optimal` is false and the best answer found is returned).
#[cfg(feature = "highs")]
pub fn solve_mps(mps: &Path, p: &Problem, time_limit_s: Option<f64>) -> Result<Exact> {
    let mut model = highs::ColProblem::default().optimise(highs::Sense::Maximise);
    let c_path = std::ffi::CString::new(mps.as_os_str().as_encoded_bytes()).with_context(|| format!("{}: a path with a NUL byte", mps.display()))?;
    // SAFETY: the pointer is the live HiGHS instance `model` owns; the path is a
    // NUL-terminated string that outlives the call.
    let status = unsafe { highs_sys::Highs_readModel(model.as_mut_ptr(), c_path.as_ptr()) };
    ensure!(status == highs_sys::STATUS_OK, "HiGHS could not read {} (status {status})", mps.display());
    let items: usize = p.groups.iter().map(|g| g.items.len()).sum();
    ensure!(model.num_cols() == items && model.num_rows() == p.groups.len() + 2, "{}: HiGHS read {} columns and {} rows, the problem has {items} items and {} rows", mps.display(), model.num_cols(), model.num_rows(), p.groups.len() + 2);
    let set = |model: &mut highs::Model, name: &str, v: f64| model.try_set_option(name, v).map_err(|_| anyhow::anyhow!("HiGHS rejected option {name} = {v}"));
    set(&mut model, "mip_rel_gap", 0.0)?;
    set(&mut model, "mip_abs_gap", 0.0)?;
    if let Some(t) = time_limit_s {
        set(&mut model, "time_limit", t)?;
    }
    model.try_set_option("threads", 1).map_err(|_| anyhow::anyhow!("HiGHS rejected threads = 1"))?;
    model.try_set_option("random_seed", 0).map_err(|_| anyhow::anyhow!("HiGHS rejected random_seed = 0"))?;
    let t = std::time::Instant::now();
    let solved = model.try_solve().map_err(|e| anyhow::anyhow!("HiGHS failed on {}: {e:?}", mps.display()))?;
    let solve_s = t.elapsed().as_secs_f64();
    let status = solved.status();
    let optimal = status == highs::HighsModelStatus::Optimal;
    if !optimal && solved.primal_solution_status() != highs::HighsSolutionStatus::Feasible {
        bail!("HiGHS found no feasible answer to {}: {status:?}", mps.display());
    }
    let cols = solved.get_solution();
    let cols = cols.columns();
    let mut choice = Vec::with_capacity(p.groups.len());
    let mut k = 0;
    for g in &p.groups {
        let chosen: Vec<u32> = (0..g.items.len() as u32).filter(|&i| cols[k + i as usize] > 0.5).collect();
        ensure!(chosen.len() <= 1, "{}: HiGHS chose {} items of one group", mps.display(), chosen.len());
        choice.push(chosen.first().copied());
        k += g.items.len();
    }
    Ok(Exact { objective: p.value(&choice), highs_objective: solved.objective_value(), choice, optimal, status: format!("{status:?}"), solve_s })
}

/// Write `p` as MPS to `path` and solve it with HiGHS.
#[cfg(feature = "highs")]
pub fn solve(p: &Problem, name: &str, path: &Path, time_limit_s: Option<f64>) -> Result<Exact> {
    std::fs::write(path, p.to_mps(name)).with_context(|| format!("writing {}", path.display()))?;
    solve_mps(path, p, time_limit_s)
}

/// Without HiGHS in the build: an error saying how to build it in.
#[cfg(not(feature = "highs"))]
pub fn solve(_: &Problem, _: &str, _: &Path, _: Option<f64>) -> Result<Exact> {
    require("solving with HiGHS")?;
    unreachable!()
}

#[cfg(all(test, feature = "highs"))]
mod tests {
    use super::*;
    use tessera_core::power::{Group, Item};

    #[test]
    fn highs_reads_the_mps_and_finds_the_optimum_of_a_tiny_problem() {
        // either both small jobs (3 + 2.5) or the large one (5): both fit, 5.5 wins;
        // the forced third job takes its only item
        let p = Problem {
            groups: vec![
                Group { forced: false, items: vec![Item { value: 3.0, nodes: 2, power: 10.0 }, Item { value: 5.0, nodes: 4, power: 20.0 }] },
                Group { forced: false, items: vec![Item { value: 2.5, nodes: 2, power: 10.0 }] },
                Group { forced: true, items: vec![Item { value: 0.25, nodes: 1, power: 0.5 }] },
            ],
            nodes: 5,
            power: 20.5,
        };
        let dir = tempfile::tempdir().unwrap();
        let e = solve(&p, "tiny", &dir.path().join("tiny.mps"), None).unwrap();
        assert!(e.optimal, "{}", e.status);
        assert_eq!(e.choice, vec![Some(0), Some(0), Some(0)]);
        assert_eq!(e.objective, 5.75);
        assert!((e.highs_objective - 5.75).abs() < 1e-9, "HiGHS maximised: {}", e.highs_objective);
    }

    #[test]
    fn an_unreadable_file_is_an_error() {
        let dir = tempfile::tempdir().unwrap();
        let p = Problem { groups: vec![], nodes: 1, power: 1.0 };
        let e = solve_mps(&dir.path().join("missing.mps"), &p, None).unwrap_err();
        assert!(e.to_string().contains("could not read"), "{e}");
    }
}
