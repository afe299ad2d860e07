//! The worked examples of the Liverpool note (`../shared/seeds/000_*.txt`).

use tessera_accounting::publish::{capacity, num};
use tessera_core::Cluster;

fn liverpool() -> Cluster {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../examples/clusters/liverpool-2010.toml");
    Cluster::from_toml(&std::fs::read_to_string(path).unwrap(), "liverpool-2010.toml").unwrap()
}

/// "10 systems with 2 physical CPUs with 2 cores in each, and 5 systems with 4
/// physical CPUs with 1 core in each": CE_PHYSCPU 40, CE_LOGCPU 60, Cores 1.5.
#[test]
fn physical_logical_and_cores() {
    let c = capacity(&liverpool());
    assert_eq!(c.physical_cpus, 40);
    assert_eq!(c.logical_cpus, 60);
    assert_eq!(c.cores, 1.5);
    // the scaling factor of the new nodes is the note's $cpumult 1.86
    assert_eq!(c.node_types[0].scaling_factor, 1.0);
    assert!((c.node_types[1].scaling_factor - 1.86).abs() < 1e-12);
    // Benchmark is the total HS06 over the logical CPUs
    let total = 10.0 * 4.0 * 5.32 + 5.0 * 4.0 * 9.8952;
    assert!((c.total_hs06 - total).abs() < 1e-9);
    assert!((c.benchmark_hs06 - total / 60.0).abs() < 1e-12);
    assert!((c.si00 - 250.0 * total / 60.0).abs() < 1e-9);
}

/// "5.32 ... multiplying it by 250, giving 1330": the reference strength.
#[test]
fn hs06_to_si00() {
    let c = capacity(&liverpool());
    assert_eq!(c.cpu_scaling_reference_si00, 1330.0);
    let homogeneous = Cluster::from_toml("[[nodetype]]\nname = \"n\"\nnodes = \"n1\"\ncores = 1\nhs06_per_core = 5.32\n", "h").unwrap();
    let h = capacity(&homogeneous);
    assert_eq!(num(h.si00, 0), "1330");
    assert_eq!(h.other_description(), "Cores=1,Benchmark=5.32-HEP-SPEC06");
}

/// Case 2: normalizing the same cluster to 1000 SI00 (4 HS06 per core) gives a
/// scaling factor of 1.33, and an hour of CPU scaled by it, priced at the
/// reference, is the same number of SI00-hours as case 1 (1330).
#[test]
fn normalizing_to_a_round_reference_delivers_the_same_si00_hours() {
    let node = "[[nodetype]]\nname = \"n\"\nnodes = \"n1\"\ncores = 1\nhs06_per_core = 5.32\n";
    let case1 = capacity(&Cluster::from_toml(node, "case1").unwrap());
    let case2 = capacity(&Cluster::from_toml(&format!("[reference]\nhs06_per_core = 4.0\n{node}"), "case2").unwrap());
    assert_eq!(case2.cpu_scaling_reference_si00, 1000.0);
    assert_eq!(case2.node_types[0].scaling_factor, 1.33);
    let hours = 1.0;
    let delivered1 = hours * case1.node_types[0].scaling_factor * case1.cpu_scaling_reference_si00;
    let delivered2 = hours * case2.node_types[0].scaling_factor * case2.cpu_scaling_reference_si00;
    assert!((delivered1 - 1330.0).abs() < 1e-9 && (delivered2 - delivered1).abs() < 1e-9);
    // and the physical power published does not depend on the reference
    assert_eq!(case1.si00, case2.si00);
}

#[test]
fn every_format_carries_the_figures() {
    let c = capacity(&liverpool());
    let yaim = c.yaim();
    for line in ["CE_PHYSCPU=40", "CE_LOGCPU=60", "CE_OTHERDESCR=\"Cores=1.5,Benchmark=6.85-HEP-SPEC06\"", "CE_SI00=1711", "CE_CAPABILITY=\"CPUScalingReferenceSI00=1330\""] {
        assert!(yaim.lines().any(|l| l == line), "yaim lacks {line}:\n{yaim}");
    }
    let g13 = c.glue13();
    for line in ["GlueSubClusterPhysicalCPUs: 40", "GlueSubClusterLogicalCPUs: 60", "GlueHostProcessorOtherDescription: Cores=1.5,Benchmark=6.85-HEP-SPEC06", "GlueHostBenchmarkSI00: 1711", "GlueCECapability: CPUScalingReferenceSI00=1330"] {
        assert!(g13.lines().any(|l| l == line), "glue13 lacks {line}:\n{g13}");
    }
    let g2 = c.glue2();
    for line in [
        "GLUE2ComputingManagerTotalPhysicalCPUs: 40",
        "GLUE2ComputingManagerTotalLogicalCPUs: 60",
        "dn: GLUE2ResourceID=liverpool-2010-typeD,GLUE2ServiceID=liverpool-2010-computing,GLUE2GroupID=resource,o=glue",
        "GLUE2ExecutionEnvironmentPhysicalCPUs: 4",
        "GLUE2ExecutionEnvironmentLogicalCPUs: 4",
        "GLUE2ExecutionEnvironmentCPUTimeScalingFactor: 1.86",
        "GLUE2ExecutionEnvironmentWallTimeScalingFactor: 1.86",
        "GLUE2BenchmarkType: hep-spec06",
        "GLUE2BenchmarkValue: 9.8952",
    ] {
        assert!(g2.lines().any(|l| l == line), "glue2 lacks {line}:\n{g2}");
    }
    // LDIF: every entry starts with a dn and has its objectClasses
    for entry in g2.split("\n\n") {
        assert!(entry.starts_with("dn: "), "{entry}");
        assert!(entry.contains("objectClass: GLUE2Entity"), "{entry}");
    }
    let json = serde_json::to_value(&c).unwrap();
    for key in ["physical_cpus", "logical_cpus", "cores", "benchmark_hs06", "si00", "cpu_scaling_reference_si00", "total_hs06"] {
        assert!(json.get(key).is_some(), "json lacks {key}");
    }
    assert!((json["node_types"][1]["scaling_factor"].as_f64().unwrap() - 1.86).abs() < 1e-12);
}
