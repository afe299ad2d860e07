//! tessera-slurm's integration tests: slurm.conf texts read into clusters,
//! sacct histories into jobs, workloads and records.

mod sacct;

use tessera_slurm::conf;
use tessera_slurm::factors::Factors;
use tessera_slurm::site::{import, import_at_most, Imported, Left};

fn read(text: &str) -> Vec<conf::Line> {
    let t = text.to_string();
    conf::read("slurm.conf", &move |n: &str| if n == "slurm.conf" { Ok(t.clone()) } else { Err("no such file".into()) }).unwrap()
}

fn imp(text: &str, factors: Option<&str>) -> Result<Imported, String> {
    let f = factors.map(|f| Factors::from_toml(f, "factors.toml").unwrap());
    import(&read(text), f.as_ref(), "out.toml").map_err(|e| e.to_string())
}

const BASE: &str = "SelectType=select/cons_tres\nSelectTypeParameters=CR_Core_Memory\n";

#[test]
fn node_lines_give_cores_memory_gpus_and_features_as_slurm_counts_them() {
    let i = imp(&format!("{BASE}NodeName=DEFAULT RealMemory=64000\nNodeName=a[1-2] CPUs=16\nNodeName=b[1-2] Boards=2 SocketsPerBoard=2 CoresPerSocket=8 ThreadsPerCore=2\nNodeName=g1 CPUs=64 CoresPerSocket=16 ThreadsPerCore=2 RealMemory=512000 Gres=gpu:a100:2,gpu:v100:2,mps:100 Features=gpu,ib\n"), None).unwrap();
    let c = &i.cluster;
    let shape: Vec<(String, u32, u32, u64, u32)> = c.node_types.iter().map(|t| (t.name.clone(), t.sockets, t.cores_per_socket, t.memory_mb, t.gpus)).collect();
    // CPUs alone: that many one-core sockets; Boards × SocketsPerBoard sockets;
    // CPUs with threads: sockets inferred from CPUs / (cores × threads)
    assert_eq!(shape, vec![("a".into(), 16, 1, 64000, 0), ("b".into(), 4, 8, 64000, 0), ("g".into(), 2, 16, 512000, 4)]);
    assert_eq!(c.node_types[2].features, vec!["gpu".to_string(), "ib".to_string()]);
    assert_eq!(c.nodes.len(), 5);
    let notes: Vec<(usize, &str)> = i.notes.iter().map(|n| (n.at.line, n.setting.as_str())).collect();
    assert!(notes.contains(&(6, "Gres=gpu:a100:2,gpu:v100:2,mps:100")), "{notes:?}");
    assert!(notes.contains(&(5, "ThreadsPerCore=2")) && notes.contains(&(6, "ThreadsPerCore=2")), "{notes:?}");
}

#[test]
fn memory_is_imported_only_where_slurm_holds_it() {
    let i = imp("SelectType=select/cons_res\nSelectTypeParameters=CR_Core\nDefMemPerCPU=1000\nNodeName=n[1-4] CPUs=8 RealMemory=32000\nPartitionName=p Nodes=ALL\n", None).unwrap();
    assert_eq!(i.cluster.nodes[0].memory_mb, 0);
    assert_eq!(i.cluster.partitions[0].def_mem_per_cpu_mb, 0);
    let n: Vec<&str> = i.notes.iter().filter(|n| n.left == Left::NotModelled).map(|n| n.setting.as_str()).collect();
    assert_eq!(n, vec!["RealMemory=32000"]);
    assert!(i.notes.iter().any(|n| n.setting == "DefMemPerCPU=1000" && n.at.line == 3), "{:?}", i.notes);
    let i = imp(&format!("{BASE}DefMemPerCPU=1000\nNodeName=n[1-4] CPUs=8 RealMemory=32000\nPartitionName=p Nodes=ALL\nPartitionName=q Nodes=n[1-2] DefMemPerCPU=3000\n"), None).unwrap();
    let d: Vec<u64> = i.cluster.partitions.iter().map(|p| p.def_mem_per_cpu_mb).collect();
    assert_eq!(d, vec![1000, 3000], "the cluster's default, or the partition's own");
    // 22.05's defaults: select/linear gives whole nodes; cons_tres alone tracks memory (CR_Core_Memory)
    let i = imp("NodeName=n[1-4] CPUs=8 RealMemory=32000\nPartitionName=p Nodes=ALL\n", None).unwrap();
    assert!(i.cluster.partitions[0].exclusive && i.cluster.nodes[0].memory_mb == 0);
    let i = imp("SelectType=select/cons_tres\nNodeName=n[1-4] CPUs=8 RealMemory=32k\nPartitionName=p Nodes=ALL\n", None).unwrap();
    assert!(!i.cluster.partitions[0].exclusive);
    assert_eq!(i.cluster.nodes[0].memory_mb, 32 * 1024, "a K suffix is × 1024");
}

#[test]
fn partitions_keep_tiers_times_preemption_and_the_last_default() {
    let text = format!("{BASE}PreemptType=preempt/partition_prio\nPreemptMode=SUSPEND\nNodeName=n[1-8] CPUs=4 RealMemory=8000\nNodeName=x[1-2] CPUs=4 RealMemory=8000 Weight=0\nPartitionName=DEFAULT MaxTime=1-00:00:00\nPartitionName=low Nodes=n[1-4],x[1-2] Default=YES PriorityTier=1\nPartitionName=high Nodes=n[1-4] PriorityTier=5 PreemptMode=OFF DefaultTime=30 Default=YES\nPartitionName=gang Nodes=n[5-8] OverSubscribe=FORCE:2 PreemptMode=GANG MaxTime=UNLIMITED\nPartitionName=req Nodes=n1 PreemptMode=REQUEUE\nPartitionName=whole Nodes=n2 OverSubscribe=EXCLUSIVE\n");
    let i = imp(&text, None).unwrap();
    let p = &i.cluster.partitions;
    let got: Vec<(&str, bool, u32, Option<i64>, Option<i64>, String, bool)> = p.iter().map(|p| (p.name.as_str(), p.default, p.priority_tier, p.max_time_s, p.default_time_s, format!("{:?}", p.preempt), p.exclusive)).collect();
    assert_eq!(
        got,
        vec![
            ("low", false, 1, Some(86_400), None, "Suspend".into(), false),
            ("high", true, 5, Some(86_400), Some(1800), "Off".into(), false),
            ("gang", false, 1, None, None, "Gang".into(), false),
            ("req", false, 1, Some(86_400), None, "Off".into(), false),
            ("whole", false, 1, Some(86_400), None, "Suspend".into(), true),
        ]
    );
    assert_eq!(p[2].oversubscribe, 2);
    // Weight 0 nodes come first, as Slurm allocates the lightest first
    assert_eq!(i.cluster.nodes[p[0].nodes[0]].name, "x1");
    let settings: Vec<String> = i.notes.iter().map(|n| format!("{}:{}", n.at.line, n.setting)).collect();
    assert!(settings.contains(&"8:Default=YES".to_string()), "the earlier default is noted: {settings:?}");
    assert!(settings.contains(&"11:PreemptMode=REQUEUE".to_string()), "{settings:?}");
    // a gang partition sharing its nodes is imported without gang scheduling, and said so
    let shared = text.replace("low Nodes=n[1-4],x[1-2]", "low Nodes=n[1-8],x[1-2]");
    let i = imp(&shared, None).unwrap();
    assert_eq!(format!("{:?}", i.cluster.partitions[2].preempt), "Off");
    assert!(i.notes.iter().any(|n| n.at.line == 10 && n.setting == "PreemptMode=GANG" && n.why.contains("`low`")), "{:?}", i.notes);
}

#[test]
fn benchmarks_come_by_node_name_nodename_or_feature_and_split_a_line() {
    let text = format!("{BASE}NodeName=a[1-4] CPUs=8 Features=old\nNodeName=b[1-2] CPUs=8 Features=new,ib\n");
    let i = imp(&text, Some("[benchmarks]\nold = 10.0\nnew = 15.0\na4 = 12.5\nunused = 3.0\n[reference]\nhs06_per_core = 10.0\n")).unwrap();
    let types: Vec<(String, usize, Option<f64>, f64)> = i.cluster.node_types.iter().map(|t| (t.name.clone(), i.cluster.nodes.iter().filter(|n| i.cluster.node_types[n.node_type].name == t.name).count(), t.benchmark_per_core, t.factor)).collect();
    assert_eq!(types, vec![("a".into(), 3, Some(10.0), 1.0), ("a-2".into(), 1, Some(12.5), 1.25), ("b".into(), 2, Some(15.0), 1.5)]);
    assert!(i.notes.iter().any(|n| n.setting == "benchmarks.unused=3" && n.at.file == "factors.toml" && n.at.line == 5), "{:?}", i.notes);
    let e = imp(&text, Some("[benchmarks]\nold = 10.0\n")).unwrap_err();
    assert_eq!(e, "slurm.conf:4: `NodeName`: no benchmark for node `b1` in factors.toml: give its name, its NodeName `b[1-2]` or one of its features under [benchmarks] (features: new, ib)");
    let e = imp(&text, Some("[benchmarks]\nold = 10.0\nnew = 1.0\nib = 2.0\n")).unwrap_err();
    assert!(e.starts_with("slurm.conf:4: `Features`: node `b1` has features `new` (1 HS06 per core) and `ib` (2)"), "{e}");
}

#[test]
fn bad_values_name_file_line_and_field() {
    for (text, want) in [
        ("NodeName=n1 CPUs=four\n", "slurm.conf:1: `CPUs`: expected an integer >= 1, found `four`"),
        ("NodeName=n[1-2 CPUs=4\n", "slurm.conf:1: `NodeName`: invalid hostlist"),
        ("NodeName=n1 CPUs=4\nNodeName=n1 CPUs=8\n", "slurm.conf:2: `NodeName`: node `n1` is already defined at slurm.conf:1"),
        ("NodeName=n1 CPUs=4\nPartitionName=p Nodes=n[1-2]\n", "slurm.conf:2: `Nodes`: node `n2` is defined by no NodeName line"),
        ("NodeName=n1 CPUs=4\nPartitionName=p Nodes=n1 MaxTime=2days\n", "slurm.conf:2: `MaxTime`: expected minutes"),
        ("NodeName=n1 CPUs=4\nPartitionName=p Nodes=n1 OverSubscribe=SOMETIMES\n", "slurm.conf:2: `OverSubscribe`: expected NO, YES[:N], EXCLUSIVE or FORCE[:N]"),
        ("NodeName=n1 CPUs=4 Gres=gpu:a100:lots\n", "slurm.conf:1: `Gres`: expected name[:type][:count]"),
        ("NodeName=n1 CPUs=4\nPartitionName=p Nodes=n1 PriorityTier=70000\n", "slurm.conf:2: `PriorityTier`: expected an integer 0..=65533, found `70000`"),
        ("ClusterName=x\n", "slurm.conf: `NodeName`: expected at least one NodeName line"),
    ] {
        let e = imp(text, None).unwrap_err();
        assert!(e.starts_with(want), "{text}:\n got  {e}\n want {want}");
    }
}

#[test]
fn slurms_older_spellings_are_read() {
    // Priority sets both PriorityTier and PriorityJobFactor; PreemptMode=ON is SUSPEND; Shared is OverSubscribe
    let i = imp(&format!("{BASE}PreemptType=preempt/partition_prio\nNodeName=n[1-2] CPUs=4\nPartitionName=p Nodes=n1 Priority=7 PreemptMode=ON\nPartitionName=q Nodes=n2 Shared=EXCLUSIVE\n"), None).unwrap();
    let p = &i.cluster.partitions;
    assert_eq!((p[0].priority_tier, p[0].priority_job_factor, format!("{:?}", p[0].preempt)), (7, 7, "Suspend".to_string()));
    assert!(p[1].exclusive);
    assert_eq!((p[0].swf_queue, p[1].swf_queue), (Some(1), Some(2)), "partitions numbered for an imported history");
}

#[test]
fn a_nodeset_names_nodes_by_feature() {
    let i = imp(&format!("{BASE}NodeName=a[1-2] CPUs=4 Features=x\nNodeName=b[1-2] CPUs=4 Features=y\nNodeSet=xs Feature=x\nPartitionName=p Nodes=xs,b1\n"), None).unwrap();
    let names: Vec<&str> = i.cluster.partitions[0].nodes.iter().map(|&n| i.cluster.nodes[n].name.as_str()).collect();
    assert_eq!(names, vec!["a1", "a2", "b1"]);
}

#[test]
fn a_defaults_setting_is_noted_once_where_written_as_written() {
    let i = imp(&format!("{BASE}NodeName=DEFAULT tmpDisk=100 CPUs=4\nNodeName=a1\nNodeName=b1 TmpDisk=200\nNodeName=c1\nPartitionName=DEFAULT Hidden=YES\nPartitionName=p Nodes=a1\nPartitionName=q Nodes=b1 Hidden=NO\n"), None).unwrap();
    let got: Vec<String> = i.notes.iter().filter(|n| n.setting.to_ascii_lowercase().starts_with("tmpdisk") || n.setting.starts_with("Hidden")).map(|n| format!("{}:{}", n.at.line, n.setting)).collect();
    // the default's once, at its line, in its spelling; a line's own where written
    assert_eq!(got, vec!["3:tmpDisk=100", "5:TmpDisk=200", "7:Hidden=YES", "9:Hidden=NO"]);
    assert!(i.notes.iter().any(|n| n.at.line == 9 && n.why.starts_with("partition `q`")), "{:?}", i.notes);
    assert_eq!(i.cluster.node_types.iter().map(|t| t.cores_per_socket * t.sockets).collect::<Vec<_>>(), vec![4, 4, 4], "the default's CPUs in every line");
}

#[test]
fn a_cluster_beyond_the_bound_is_refused_where_it_grows_past_it() {
    let lines = read("NodeName=n[1-60] CPUs=1\nNodeName=m[1-60] CPUs=1\nPartitionName=p Nodes=ALL\n");
    let e = import_at_most(&lines, None, "out.toml", 100).unwrap_err().to_string();
    assert!(e.starts_with("slurm.conf:2: `NodeName`: invalid hostlist `m[1-60]`: range `1-60` is larger than 40") && e.ends_with("60 nodes are defined before it, and a cluster has at most 100"), "{e}");
    // partitions may name each node 8 times in all; the ninth ALL is too many
    let parts: String = (1..=9).map(|k| format!("PartitionName=p{k} Nodes=ALL\n")).collect();
    let lines = read(&format!("NodeName=n[1-100] CPUs=1\n{parts}"));
    let e = import_at_most(&lines, None, "out.toml", 100).unwrap_err().to_string();
    assert!(e.starts_with("slurm.conf:10: `Nodes`: the partitions to here name more than 800 nodes in all"), "{e}");
    let e = import_at_most(&read("NodeName=n[1-100] CPUs=1\nPartitionName=a Nodes=ALL\nPartitionName=b Nodes=n[1-100],n[1-100],n[1-100],n[1-100],n[1-100],n[1-100],n[1-100],n[1-100]\n"), None, "out.toml", 100).unwrap_err().to_string();
    assert!(e.starts_with("slurm.conf:3: `Nodes`: invalid hostlist") && e.contains("expands to more than 700 names"), "a list is refused before it is built: {e}");
    let i = import_at_most(&read(&format!("NodeName=n[1-100] CPUs=1\n{}", &parts[..parts.len() - 28])), None, "out.toml", 100).unwrap();
    assert_eq!((i.cluster.nodes.len(), i.cluster.partitions.len()), (100, 8));
}

#[test]
fn a_site_of_many_lines_and_partitions_imports_in_order() {
    // 2,000 NodeName lines of one stem, heaviest first, and 20 partitions
    // over all 20,000 nodes listed backwards: a step quadratic in lines,
    // nodes or partitions would take minutes here
    let mut text = String::from(BASE);
    for l in 0..2000 {
        text += &format!("NodeName=n{l:04}-[01-10] CPUs=4 Weight={}\n", 2000 - l);
    }
    for p in 0..20 {
        let list: Vec<String> = (0..2000).rev().map(|l| format!("n{l:04}-[01-10]")).collect();
        text += &format!("PartitionName=p{p} Nodes={} PreemptMode=GANG OverSubscribe=FORCE:2\n", list.join(","));
    }
    let i = imp(&text, None).unwrap();
    let c = &i.cluster;
    assert_eq!(c.nodes.len(), 20_000);
    assert_eq!(c.node_types.len(), 2000);
    // node types lightest first, named in turn from their stem
    assert_eq!((c.node_types[0].name.as_str(), c.node_types[1999].name.as_str()), ("n-2000", "n"));
    for p in &c.partitions {
        assert_eq!(p.nodes.len(), 20_000);
        assert_eq!((c.nodes[p.nodes[0]].name.as_str(), c.nodes[p.nodes[19_999]].name.as_str()), ("n1999-01", "n0000-10"), "lightest first");
    }
    // every gang partition shares its nodes with the first other one
    let gang: Vec<&str> = i.notes.iter().filter(|n| n.setting == "PreemptMode=GANG").map(|n| n.why.as_str()).collect();
    assert_eq!(gang.len(), 20);
    assert!(gang[0].contains("`p1` holds some") && gang[1].contains("`p0` holds some"), "{:?}", &gang[..2]);
}
