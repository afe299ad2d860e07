//! Accounting listings and reports as text and CSV (`tessera acct`,
//! `tessera report utilization|usage|overhead|bill`).

use crate::table::{f2, pct, Table, TableFormat};
use std::fmt::Write as _;
use tessera_core::quote;
use tessera_accounting::acct::{AcctJob, FIELDS};
use tessera_accounting::billing::BillReport;
use tessera_accounting::overhead::OverheadReport;
use tessera_accounting::usage::{UsageRow, UtilizationRow};

/// How `acct` lists jobs: sacct's fixed-width columns, or `|`-separated
/// (`-p`: also at the end of each line; `-P`: not).
///
/// Values come from users (job names, accounts, partitions), so they are escaped:
/// in columns, control characters show as `\n`, `\x1b` ([`quote::text`]); in
/// parsable output a value never holds a `|` or a line break either: `\` is
/// written `\\`, `|` is `\x7c` and control characters as in columns
/// ([`quote::delimited`]), so splitting a line at `|` always gives the fields and
/// undoing the escapes gives the values. (Slurm's `sacct -P` writes values as
/// they are, so there a `|` in a job name moves every later column.)
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Listing {
    Columns,
    Parsable,
    Parsable2,
}

/// Jobs as sacct lists them, with the given fields (names from [`FIELDS`]).
pub fn listing(jobs: &[AcctJob], fields: &[&str], how: Listing) -> String {
    let mut out = String::new();
    if how != Listing::Columns {
        let end = if how == Listing::Parsable { "|" } else { "" };
        let _ = writeln!(out, "{}{end}", fields.join("|"));
        for j in jobs {
            let _ = writeln!(out, "{}{end}", fields.iter().map(|f| quote::delimited(&j.field(f), '|').into_owned()).collect::<Vec<_>>().join("|"));
        }
        return out;
    }
    let width = |f: &str| FIELDS.iter().find(|x| x.0 == f).map_or(10, |x| x.1);
    let _ = writeln!(out, "{}", fields.iter().map(|f| format!("{:>w$}", f, w = width(f))).collect::<Vec<_>>().join(" "));
    let _ = writeln!(out, "{}", fields.iter().map(|f| "-".repeat(width(f))).collect::<Vec<_>>().join(" "));
    for j in jobs {
        let cells: Vec<String> = fields
            .iter()
            .map(|f| {
                let w = width(f);
                let v = quote::text(&j.field(f)).into_owned();
                // sacct truncates long values and marks them with '+'
                let v = if v.chars().count() > w { format!("{}+", v.chars().take(w - 1).collect::<String>()) } else { v };
                format!("{v:>w$}")
            })
            .collect();
        let _ = writeln!(out, "{}", cells.join(" "));
    }
    out
}

pub fn utilization_table(rows: &[UtilizationRow]) -> Table {
    let mut t = Table::new(&["scope", "nodes", "capacity_core_h", "allocated_core_h", "idle_core_h", "utilization", "allocated_norm_core_h"]);
    for r in rows {
        t.row(vec![r.key.clone(), r.nodes.to_string(), f2(r.capacity_core_hours), f2(r.allocated_core_hours), f2(r.idle_core_hours), pct(Some(r.utilization)), f2(r.allocated_norm_core_hours)]);
    }
    t
}

pub fn usage_table(rows: &[UsageRow]) -> Table {
    let mut t = Table::new(&["key", "jobs", "wall_h", "norm_wall_h", "cpu_h", "norm_cpu_h", "core_h", "norm_core_h", "hs06_h"]);
    for r in rows {
        t.row(vec![r.key.clone(), r.jobs.to_string(), f2(r.wall_hours), f2(r.norm_wall_hours), f2(r.cpu_hours), f2(r.norm_cpu_hours), f2(r.core_hours), f2(r.norm_core_hours), f2(r.hs06_hours)]);
    }
    t
}

/// The overhead report: per node, unit-hours and histogram; in text, also the
/// canonical units, the totals and the `top` longest flagged intervals.
pub fn overhead_text(r: &OverheadReport, format: TableFormat, top: usize) -> String {
    let mut out = String::new();
    let text = format == TableFormat::Text;
    if text {
        let _ = writeln!(out, "canonical units: {}", r.canonical_units.iter().map(|(p, u)| format!("{p}: {u}")).collect::<Vec<_>>().join("; "));
        let _ = writeln!(out, "true overhead: {:.2} canonical-unit-hours; flagged: {} intervals, {:.2} h", r.canonical_unit_hours.total, r.flagged_intervals.len(), r.flagged_hours);
        let _ = writeln!(out);
    }
    let mut t = Table::new(&["node", "unit_hours", "histogram (units:hours)"]);
    for (n, h) in &r.canonical_unit_hours.by_node {
        let hist = &r.histogram[n];
        t.row(vec![n.clone(), f2(*h), hist.iter().map(|(k, v)| format!("{k}:{v:.1}h")).collect::<Vec<_>>().join(" ")]);
    }
    out.push_str(&t.render(format));
    if text && !r.flagged_intervals.is_empty() {
        let mut flagged = r.flagged_intervals.clone();
        flagged.sort_by_key(|f| std::cmp::Reverse(f.to - f.from));
        let mut t = Table::new(&["node", "from", "to", "units", "waiting_job", "job_units"]);
        for f in flagged.iter().take(top) {
            t.row(vec![f.node.clone(), f.from.to_string(), f.to.to_string(), f.units.to_string(), f.waiting_job.to_string(), f.job_units.to_string()]);
        }
        let _ = writeln!(out);
        let _ = writeln!(out, "longest flagged intervals (a node with k units idle while a job needing <= k waited):");
        out.push_str(&t.render(format));
    }
    out
}

/// Bills per account; in text, also the provider's loss.
pub fn bill_text(r: &BillReport, format: TableFormat) -> String {
    let mut t = Table::new(&["account", "alloc_core_h", "billed_core_h", "cpu_rate", "alloc_gb_h", "billed_gb_h", "mem_rate", "billed_gpu_h", "billed_hs06_h", "energy_kwh", "cost"]);
    let mut accounts: Vec<_> = r.accounts.iter().collect();
    accounts.sort_by(|a, b| tessera_accounting::natural::cmp(a.0, b.0));
    for (k, b) in accounts {
        t.row(vec![
            k.clone(),
            f2(b.allocated.core_hours),
            f2(b.billed.core_hours),
            pct(b.rates.cpu),
            f2(b.allocated.memory_gb_hours),
            f2(b.billed.memory_gb_hours),
            pct(b.rates.memory),
            f2(b.billed.gpu_hours),
            f2(b.hs06_hours),
            format!("{:.3}", b.energy_kwh),
            f2(b.cost),
        ]);
    }
    let mut out = t.render(format);
    if format == TableFormat::Text {
        let _ = writeln!(
            out,
            "\nprovider loss (true overhead, idle and unallocated resources): {:.2} core-h, {:.2} GB-h, {:.2} GPU-h of {:.2} core-h, {:.2} GB-h, {:.2} GPU-h",
            r.provider_loss.core_hours, r.provider_loss.memory_gb_hours, r.provider_loss.gpu_hours, r.capacity.core_hours, r.capacity.memory_gb_hours, r.capacity.gpu_hours
        );
    }
    out
}
