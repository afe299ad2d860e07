//! `tessera sim compare`: several policies (or cluster files) on the same
//! workload, in parallel, each variant a [`RunSpec`] run as `sim run` runs it;
//! one report overlays them ([`tessera_report::study`]).

use crate::parallel::parallel;
use crate::run::execute;
use crate::spec::RunSpec;
use anyhow::{Context, Result};
use std::path::PathBuf;
use tessera_core::PolicyKind;
use tessera_report::study::Variant;

/// The variants of a comparison, named: every policy (by name, as given) on
/// every cluster file (none: `base`'s), each `base` otherwise.
pub fn variants(base: &RunSpec, policies: &[&str], clusters: &[PathBuf]) -> Result<Vec<(String, RunSpec)>> {
    let clusters: Vec<Option<&PathBuf>> = if clusters.is_empty() { vec![None] } else { clusters.iter().map(Some).collect() };
    let mut out = Vec::new();
    for c in &clusters {
        for p in policies {
            let name = match c {
                Some(c) if clusters.len() > 1 => format!("{p} on {}", c.file_stem().and_then(|s| s.to_str()).unwrap_or("?")),
                _ => p.to_string(),
            };
            let policy: PolicyKind = p.parse()?;
            out.push((name, RunSpec { policy, cluster: c.cloned().or_else(|| base.cluster.clone()), ..base.clone() }));
        }
    }
    Ok(out)
}

/// Run every variant, a worker per core (at most `threads`); the workload's
/// label and each variant's jobs.
pub fn run(variants: &[(String, RunSpec)], threads: usize) -> Result<(String, Vec<Variant>)> {
    let results = parallel(variants, threads, "simulations", |(name, spec)| {
        execute(spec).map(|e| (Variant { name: name.clone(), jobs: tessera_sim::metrics::job_times(&e.w, &e.outcome), capacity: e.w.capacity as f64 }, e.label))
    });
    let mut out = Vec::new();
    let mut label = String::new();
    for (r, (name, _)) in results.into_iter().zip(variants) {
        let (v, l) = r.with_context(|| format!("variant {name}"))?;
        label = l;
        out.push(v);
    }
    Ok((label, out))
}
