//! Installed capacity, computed from a cluster file and rendered in the formats grid
//! sites publish.
//!
//! Definitions (S. Burke's rules for the WLCG installed-capacity accounting, as in
//! the Liverpool note in the seeds):
//! * PhysicalCPUs = Σ nodes × sockets; LogicalCPUs = Σ nodes × cores;
//! * Cores = LogicalCPUs / PhysicalCPUs (may be fractional);
//! * Benchmark = total HS06 / LogicalCPUs (the average HS06 of one logical CPU), so
//!   LogicalCPUs × Benchmark is the real power of the site;
//! * SI00 = Benchmark × 250 (1 HS06 = 250 "bogo" SpecInt2000 by convention);
//! * CPUScalingReferenceSI00 = the reference's HS06 per core × 250: the strength
//!   that a scaled second of batch-system time stands for.
//!
//! Scaling factors, per node type, factor = HS06 per core / reference HS06 per core,
//! published in both conventions users meet:
//! * TORQUE `pbs_mom` `$cputmult` / `$wallmult` multiply the CPU and wall time a
//!   job *uses* by the factor (a node twice as fast reports twice the usage, and
//!   reaches a limit in half the time);
//! * GLUE 2 `CPUTimeScalingFactor` / `WallTimeScalingFactor`: the published limit is
//!   *divided* by the factor to give the limit on that environment.
//!
//! Both are the same number; they differ in what it is applied to. GLUE 2 asks
//! that the reference be the fastest environment (factors <= 1), which the EGI
//! validator checks; choose `[reference]` accordingly if you publish to a BDII.

use serde::Serialize;
use std::fmt::Write;
use tessera_core::{quote, BenchmarkKind, Cluster};

/// 1 HEP-SPEC06 = 250 SI00, by WLCG convention.
pub const SI00_PER_HS06: f64 = 250.0;

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct NodeTypeCapacity {
    pub name: String,
    pub count: usize,
    pub physical_cpus_per_node: u32,
    pub logical_cpus_per_node: u32,
    pub memory_mb: u64,
    pub hs06_per_core: Option<f64>,
    pub hs06_per_node: Option<f64>,
    pub benchmark_type: Option<&'static str>,
    /// HS06 per core / the reference's.
    pub scaling_factor: f64,
    /// TORQUE pbs_mom: `$cputmult` and `$wallmult`.
    pub torque_cputmult: f64,
    pub torque_wallmult: f64,
    /// GLUE 2 ExecutionEnvironment CPUTimeScalingFactor and WallTimeScalingFactor.
    pub glue2_cpu_time_scaling_factor: f64,
    pub glue2_wall_time_scaling_factor: f64,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Capacity {
    pub cluster: String,
    pub physical_cpus: u64,
    pub logical_cpus: u64,
    /// LogicalCPUs / PhysicalCPUs.
    pub cores: f64,
    /// Average HS06 per logical CPU.
    pub benchmark_hs06: f64,
    pub si00: f64,
    pub cpu_scaling_reference_si00: f64,
    /// The node type (or `abstract`) that scaling factor 1 stands for.
    pub reference: String,
    pub total_hs06: f64,
    pub node_types: Vec<NodeTypeCapacity>,
}

/// Compute the installed capacity of a cluster.
pub fn capacity(c: &Cluster) -> Capacity {
    let mut node_types = Vec::new();
    let (mut phys, mut logical, mut total_hs06) = (0u64, 0u64, 0f64);
    // nodes per type, in one pass over the nodes
    let mut counts = vec![0usize; c.node_types.len()];
    for n in &c.nodes {
        counts[n.node_type] += 1;
    }
    for (i, t) in c.node_types.iter().enumerate() {
        let count = counts[i];
        phys += count as u64 * t.sockets as u64;
        logical += count as u64 * t.cores() as u64;
        total_hs06 += count as f64 * t.benchmark_per_node().unwrap_or(0.0);
        node_types.push(NodeTypeCapacity {
            name: t.name.clone(),
            count,
            physical_cpus_per_node: t.sockets,
            logical_cpus_per_node: t.cores(),
            memory_mb: t.memory_mb,
            hs06_per_core: t.benchmark_per_core,
            hs06_per_node: t.benchmark_per_node(),
            benchmark_type: t.benchmark_kind.map(|k| match k {
                BenchmarkKind::Hs06 => "hep-spec06",
                BenchmarkKind::HepScore23 => "hepscore23",
            }),
            scaling_factor: t.factor,
            torque_cputmult: t.factor,
            torque_wallmult: t.factor,
            glue2_cpu_time_scaling_factor: t.factor,
            glue2_wall_time_scaling_factor: t.factor,
        });
    }
    let benchmark = if logical > 0 { total_hs06 / logical as f64 } else { 0.0 };
    Capacity {
        cluster: c.name.clone(),
        physical_cpus: phys,
        logical_cpus: logical,
        cores: if phys > 0 { logical as f64 / phys as f64 } else { 0.0 },
        benchmark_hs06: benchmark,
        si00: benchmark * SI00_PER_HS06,
        cpu_scaling_reference_si00: c.reference.hs06_per_core * SI00_PER_HS06,
        reference: c.reference.name.clone(),
        total_hs06,
        node_types,
    }
}

/// A number as published: at most `places` decimals, trailing zeros dropped.
pub fn num(x: f64, places: usize) -> String {
    let s = format!("{x:.places$}");
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        s
    }
}

impl Capacity {
    /// `Cores=1.5,Benchmark=6.85-HEP-SPEC06` (GlueHostProcessorOtherDescription,
    /// YAIM CE_OTHERDESCR).
    pub fn other_description(&self) -> String {
        format!("Cores={},Benchmark={}-HEP-SPEC06", num(self.cores, 2), num(self.benchmark_hs06, 2))
    }

    /// A report for reading; names as [`quote::text`] shows them (control
    /// characters escaped).
    pub fn text(&self) -> String {
        let mut s = String::new();
        let _ = writeln!(s, "cluster                   {}", quote::text(&self.cluster));
        let _ = writeln!(s, "PhysicalCPUs              {}", self.physical_cpus);
        let _ = writeln!(s, "LogicalCPUs               {}", self.logical_cpus);
        let _ = writeln!(s, "Cores                     {}", num(self.cores, 4));
        let _ = writeln!(s, "Benchmark (HS06/core)     {}", num(self.benchmark_hs06, 4));
        let _ = writeln!(s, "SI00                      {}", num(self.si00, 0));
        let _ = writeln!(s, "CPUScalingReferenceSI00   {} (reference: {})", num(self.cpu_scaling_reference_si00, 0), quote::text(&self.reference));
        let _ = writeln!(s, "total capacity (HS06)     {}", num(self.total_hs06, 2));
        let _ = writeln!(s);
        let _ = writeln!(s, "{:<12} {:>6} {:>9} {:>9} {:>11} {:>8}  TORQUE mom config", "NODETYPE", "COUNT", "PHYSCPUS", "LOGCPUS", "HS06/CORE", "FACTOR");
        for t in &self.node_types {
            let _ = writeln!(
                s,
                "{:<12} {:>6} {:>9} {:>9} {:>11} {:>8}  $cputmult {} / $wallmult {}",
                quote::text(&t.name),
                t.count,
                t.physical_cpus_per_node,
                t.logical_cpus_per_node,
                t.hs06_per_core.map_or("-".into(), |b| num(b, 4)),
                num(t.scaling_factor, 4),
                num(t.torque_cputmult, 4),
                num(t.torque_wallmult, 4)
            );
        }
        s
    }

    /// YAIM `site-info.def` variables (bash syntax: string values double-quoted
    /// by [`quote::shell_double`], so none can expand or end its line).
    pub fn yaim(&self) -> String {
        format!(
            "CE_PHYSCPU={}\nCE_LOGCPU={}\nCE_SMPSIZE={}\nCE_OTHERDESCR={}\nCE_SI00={}\nCE_CAPABILITY={}\n",
            self.physical_cpus,
            self.logical_cpus,
            self.node_types.iter().map(|t| t.logical_cpus_per_node).max().unwrap_or(0),
            quote::shell_double(&self.other_description()),
            num(self.si00, 0),
            quote::shell_double(&format!("CPUScalingReferenceSI00={}", num(self.cpu_scaling_reference_si00, 0)))
        )
    }

    /// GLUE 1.3 attributes (LDIF of the SubCluster and the CE capability).
    /// Values that are not RFC 2849 SAFE-STRINGs are written in base64 and DN
    /// values escaped per RFC 4514 ([`quote::ldif`], [`quote::dn_value`]), so a
    /// cluster name cannot add an attribute or an entry.
    pub fn glue13(&self) -> String {
        let c = &self.cluster;
        let ce = format!("{c}-ce");
        let mut s = String::new();
        let dc = quote::dn_value(c);
        attr(&mut s, "dn", format!("GlueSubClusterUniqueID={dc},GlueClusterUniqueID={dc},mds-vo-name=resource,o=grid"));
        for oc in ["GlueClusterTop", "GlueSubCluster", "GlueSchemaVersion", "GlueHostArchitecture", "GlueHostBenchmark", "GlueHostMainMemory", "GlueHostProcessor", "GlueInformationService", "GlueKey"] {
            attr(&mut s, "objectClass", oc);
        }
        attr(&mut s, "GlueSubClusterUniqueID", c);
        attr(&mut s, "GlueSubClusterName", c);
        attr(&mut s, "GlueSubClusterPhysicalCPUs", self.physical_cpus);
        attr(&mut s, "GlueSubClusterLogicalCPUs", self.logical_cpus);
        attr(&mut s, "GlueHostArchitectureSMPSize", self.node_types.iter().map(|t| t.logical_cpus_per_node).max().unwrap_or(0));
        attr(&mut s, "GlueHostProcessorOtherDescription", self.other_description());
        attr(&mut s, "GlueHostBenchmarkSI00", num(self.si00, 0));
        attr(&mut s, "GlueHostMainMemoryRAMSize", self.node_types.iter().map(|t| t.memory_mb).min().unwrap_or(0));
        attr(&mut s, "GlueChunkKey", format!("GlueClusterUniqueID={c}"));
        attr(&mut s, "GlueSchemaVersionMajor", 1);
        attr(&mut s, "GlueSchemaVersionMinor", 3);
        let _ = writeln!(s);
        attr(&mut s, "dn", format!("GlueCEUniqueID={},mds-vo-name=resource,o=grid", quote::dn_value(&ce)));
        attr(&mut s, "objectClass", "GlueCETop");
        attr(&mut s, "objectClass", "GlueCE");
        attr(&mut s, "GlueCEUniqueID", &ce);
        attr(&mut s, "GlueCECapability", format!("CPUScalingReferenceSI00={}", num(self.cpu_scaling_reference_si00, 0)));
        attr(&mut s, "GlueForeignKey", format!("GlueClusterUniqueID={c}"));
        s
    }

    /// GLUE 2.0 LDIF: the ComputingManager with totals and the reference, and per
    /// node type an ExecutionEnvironment (per-instance CPUs, scaling factors) with
    /// its Benchmark entry. Escaped as [`Capacity::glue13`] is.
    pub fn glue2(&self) -> String {
        let c = &self.cluster;
        let svc = format!("{c}-computing");
        let mgr = format!("{c}-manager");
        let base = format!("GLUE2ServiceID={},GLUE2GroupID=resource,o=glue", quote::dn_value(&svc));
        let mgr_dn = format!("GLUE2ManagerID={},{base}", quote::dn_value(&mgr));
        let mut s = String::new();
        attr(&mut s, "dn", &mgr_dn);
        for oc in ["GLUE2Entity", "GLUE2Manager", "GLUE2ComputingManager"] {
            attr(&mut s, "objectClass", oc);
        }
        attr(&mut s, "GLUE2ManagerID", &mgr);
        attr(&mut s, "GLUE2ManagerProductName", "tessera");
        attr(&mut s, "GLUE2ManagerServiceForeignKey", &svc);
        attr(&mut s, "GLUE2ComputingManagerTotalPhysicalCPUs", self.physical_cpus);
        attr(&mut s, "GLUE2ComputingManagerTotalLogicalCPUs", self.logical_cpus);
        attr(&mut s, "GLUE2ComputingManagerHomogeneous", if self.node_types.len() == 1 { "TRUE" } else { "FALSE" });
        attr(&mut s, "GLUE2EntityOtherInfo", format!("CPUScalingReferenceSI00={}", num(self.cpu_scaling_reference_si00, 0)));
        attr(&mut s, "GLUE2EntityOtherInfo", self.other_description());
        let _ = writeln!(s);
        let bench = format!("{mgr}_hep-spec06");
        attr(&mut s, "dn", format!("GLUE2BenchmarkID={},{mgr_dn}", quote::dn_value(&bench)));
        attr(&mut s, "objectClass", "GLUE2Entity");
        attr(&mut s, "objectClass", "GLUE2Benchmark");
        attr(&mut s, "GLUE2BenchmarkID", &bench);
        attr(&mut s, "GLUE2BenchmarkType", "hep-spec06");
        attr(&mut s, "GLUE2BenchmarkValue", num(self.benchmark_hs06, 2));
        attr(&mut s, "GLUE2BenchmarkComputingManagerForeignKey", &mgr);
        for t in &self.node_types {
            let ee = format!("{c}-{}", t.name);
            let ee_dn = format!("GLUE2ResourceID={},{base}", quote::dn_value(&ee));
            let _ = writeln!(s);
            attr(&mut s, "dn", &ee_dn);
            for oc in ["GLUE2Entity", "GLUE2Resource", "GLUE2ExecutionEnvironment"] {
                attr(&mut s, "objectClass", oc);
            }
            attr(&mut s, "GLUE2ResourceID", &ee);
            attr(&mut s, "GLUE2EntityName", &t.name);
            attr(&mut s, "GLUE2ResourceManagerForeignKey", &mgr);
            attr(&mut s, "GLUE2ExecutionEnvironmentComputingManagerForeignKey", &mgr);
            attr(&mut s, "GLUE2ExecutionEnvironmentPlatform", "amd64");
            attr(&mut s, "GLUE2ExecutionEnvironmentTotalInstances", t.count);
            attr(&mut s, "GLUE2ExecutionEnvironmentPhysicalCPUs", t.physical_cpus_per_node);
            attr(&mut s, "GLUE2ExecutionEnvironmentLogicalCPUs", t.logical_cpus_per_node);
            let multiplicity = match (t.physical_cpus_per_node > 1, t.logical_cpus_per_node > t.physical_cpus_per_node) {
                (false, false) => "singlecpu-singlecore",
                (false, true) => "singlecpu-multicore",
                (true, false) => "multicpu-singlecore",
                (true, true) => "multicpu-multicore",
            };
            attr(&mut s, "GLUE2ExecutionEnvironmentCPUMultiplicity", multiplicity);
            attr(&mut s, "GLUE2ExecutionEnvironmentMainMemorySize", t.memory_mb);
            attr(&mut s, "GLUE2ExecutionEnvironmentOSFamily", "linux");
            attr(&mut s, "GLUE2ExecutionEnvironmentConnectivityIn", "FALSE");
            attr(&mut s, "GLUE2ExecutionEnvironmentConnectivityOut", "TRUE");
            attr(&mut s, "GLUE2ExecutionEnvironmentCPUTimeScalingFactor", num(t.glue2_cpu_time_scaling_factor, 4));
            attr(&mut s, "GLUE2ExecutionEnvironmentWallTimeScalingFactor", num(t.glue2_wall_time_scaling_factor, 4));
            if let (Some(b), Some(kind)) = (t.hs06_per_core, t.benchmark_type) {
                let id = format!("{ee}_{kind}");
                let _ = writeln!(s);
                attr(&mut s, "dn", format!("GLUE2BenchmarkID={},{ee_dn}", quote::dn_value(&id)));
                attr(&mut s, "objectClass", "GLUE2Entity");
                attr(&mut s, "objectClass", "GLUE2Benchmark");
                attr(&mut s, "GLUE2BenchmarkID", &id);
                attr(&mut s, "GLUE2BenchmarkType", kind);
                attr(&mut s, "GLUE2BenchmarkValue", num(b, 4));
                attr(&mut s, "GLUE2BenchmarkExecutionEnvironmentForeignKey", &ee);
            }
        }
        s
    }
}

/// One LDIF line, `name: value` or `name:: base64` ([`quote::ldif`]).
fn attr(s: &mut String, name: &str, value: impl std::fmt::Display) {
    s.push_str(&quote::ldif(name, &value.to_string()));
    s.push('\n');
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_as_published() {
        assert_eq!(num(1.5, 2), "1.5");
        assert_eq!(num(1330.0, 0), "1330");
        assert_eq!(num(6.845066, 2), "6.85");
        assert_eq!(num(2.0, 4), "2");
    }
}
