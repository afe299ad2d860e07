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
    variants_with(base, policies, &[], clusters)
}

/// [`variants`], each policy also under each queue order of `priorities`
/// (`fifo`, `multifactor`; none: the base's): submission order against fair
/// share on the same trace.
pub fn variants_with(base: &RunSpec, policies: &[&str], priorities: &[&str], clusters: &[PathBuf]) -> Result<Vec<(String, RunSpec)>> {
    let clusters: Vec<Option<&PathBuf>> = if clusters.is_empty() { vec![None] } else { clusters.iter().map(Some).collect() };
    let orders: Vec<Option<&str>> = if priorities.is_empty() { vec![None] } else { priorities.iter().map(|p| Some(*p)).collect() };
    let mut out = Vec::new();
    for c in &clusters {
        for p in policies {
            for o in &orders {
                let mut name = p.to_string();
                if let Some(o) = o.filter(|_| orders.len() > 1) {
                    name = format!("{name} {o}");
                }
                if let Some(c) = c.filter(|_| clusters.len() > 1) {
                    name = format!("{name} on {}", c.file_stem().and_then(|s| s.to_str()).unwrap_or("?"));
                }
                let policy: PolicyKind = p.parse()?;
                let mut spec = RunSpec { policy, cluster: c.cloned().or_else(|| base.cluster.clone()), ..base.clone() };
                if let Some(o) = o {
                    spec.set("--priority", o)?;
                }
                out.push((name, spec));
            }
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
