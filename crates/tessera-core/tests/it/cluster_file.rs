//! Reading a cluster file: what it must refuse, with the file, the line, the key
//! and what was expected, rather than leave to a panic or a daemon later; and
//! reading a large one in time near-linear in its size.

use proptest::prelude::*;
use tessera_core::{hostlist, Cluster};

/// Four nodes of the paper's power model (busy: cap + 18 + 38 W) that draw 10 W
/// idle: 40 W idle in all, and one busy node at the lowest cap, 30 W, adds
/// 30 + 18 + 38 - 10 = 76 W.
fn power(budget: &str) -> String {
    format!(
        "name = \"p\"\npower_budget_w = {budget}\n\n[[nodetype]]\nname = \"n\"\ncount = 4\ncores = 4\nbase_power_w = 38\nmemory_power_w = 18\ncpu_max_power_w = 60\ncpu_cap_levels_w = [60, 30, 44]\nidle_power_w = 10\n"
    )
}

/// A budget below what the nodes draw idle used to be accepted, and every
/// policy of the simulator then panicked ("power drawn … exceeds the budget").
#[test]
fn a_budget_below_the_idle_power_of_all_nodes_is_refused() {
    let e = Cluster::from_toml(&power("39.5"), "p.toml").unwrap_err().to_string();
    assert_eq!(e, "p.toml:2: `power_budget_w`: the idle power of all nodes, 40 W (4 nodes at 10 W), exceeds the budget, 39.5 W: expected at least 116 W (the idle power, and 76 W more to run one node: node type `n` at its lowest CPU cap, 30 W)");
    // two node types: the idle power of each counts
    let two = power("100") + "\n[[nodetype]]\nname = \"m\"\ncount = 2\ncores = 4\nbase_power_w = 38\nmemory_power_w = 18\ncpu_max_power_w = 60\ncpu_cap_levels_w = [30]\nidle_power_w = 35\n";
    let e = Cluster::from_toml(&two, "p.toml").unwrap_err().to_string();
    assert!(e.starts_with("p.toml:2: `power_budget_w`: the idle power of all nodes, 110 W (4 nodes at 10 W, 2 at 35 W), exceeds the budget, 100 W"), "{e}");
    // the same check for a budget given elsewhere (tessera sim run --budget-w)
    let c = Cluster::from_toml(&power("1000"), "p.toml").unwrap();
    assert_eq!(c.check_power_budget(1000.0), Ok(()));
    assert!(c.check_power_budget(39.0).unwrap_err().starts_with("the idle power of all nodes, 40 W"));
}

/// A budget that the idle nodes leave too little of to run one node at its
/// lowest CPU cap can run no job at all.
#[test]
fn a_budget_that_runs_no_node_at_its_lowest_cap_is_refused() {
    let e = Cluster::from_toml(&power("115"), "p.toml").unwrap_err().to_string();
    assert_eq!(e, "p.toml:2: `power_budget_w`: 115 W cannot run one node: the idle power of all nodes is 40 W and a busy node adds at least 76 W (node type `n` at its lowest CPU cap, 30 W): expected at least 116 W");
    let c = Cluster::from_toml(&power("116"), "p.toml").unwrap();
    assert_eq!(c.power_budget_w, Some(116.0));
    // an idle node that draws more than a busy one: the idle power is the bound
    let hot = power("400").replace("idle_power_w = 10", "idle_power_w = 100");
    assert!(Cluster::from_toml(&hot, "p.toml").is_ok());
    let e = Cluster::from_toml(&hot.replace("= 400", "= 399"), "p.toml").unwrap_err().to_string();
    assert!(e.contains("the idle power of all nodes, 400 W (4 nodes at 100 W), exceeds the budget, 399 W"), "{e}");
}

const NAMES: &str = r#"
name = "mini"

[[nodetype]]
name = "std"
count = 2
cores = 4
features = ["ib"]
network = "eth"

[[nodetype]]
name = "gpu"
nodes = "g[1-2]"
cores = 8

[[partition]]
name = "batch"
nodetypes = ["std", "gpu"]
"#;

/// A node type's name (the prefix of its nodes' names when it gives `count`) and
/// every node's name must be one a hostlist can hold: `tessera up` hands an
/// agent its nodes as a hostlist, and a name with a comma used to be accepted
/// here and then fail there ("--nodes: no node a in cluster") after 30 s.
#[test]
fn names_a_hostlist_cannot_hold_are_refused() {
    let expected = "expected a host name without `,`, `[`, `]`, whitespace or control characters (a hostlist could not hold it)";
    let cases = [
        ("name = \"std\"", "name = \"s,td\"", "t.toml:5: `nodetype[0].name`", "found `s,td`"),
        ("name = \"std\"", "name = \"s[1]\"", "t.toml:5: `nodetype[0].name`", "found `s[1]`"),
        ("name = \"std\"", "name = \"st]d\"", "t.toml:5: `nodetype[0].name`", "found `st]d`"),
        ("name = \"std\"", "name = \"st d\"", "t.toml:5: `nodetype[0].name`", "found `st d`"),
        ("name = \"std\"", "name = \" std\"", "t.toml:5: `nodetype[0].name`", "found ` std`"),
        ("name = \"std\"", "name = \"s\\ttd\"", "t.toml:5: `nodetype[0].name`", "found `s\\ttd`"),
        ("name = \"std\"", "name = \"s\\u001btd\"", "t.toml:5: `nodetype[0].name`", "found `s\\u{1b}td`"),
        ("name = \"std\"", "name = \"s\\u2028td\"", "t.toml:5: `nodetype[0].name`", "found `s\u{2028}td`"),
        // a type that names its nodes: the names, and its own name too
        ("nodes = \"g[1-2]\"", "nodes = \"g [1-2]\"", "t.toml:13: `nodetype[1].nodes`", "found `g 1`"),
        ("nodes = \"g[1-2]\"", "nodes = \"g[1-2]\\u0007\"", "t.toml:13: `nodetype[1].nodes`", "found `g1\\u{7}`"),
        ("name = \"gpu\"", "name = \"g,pu\"", "t.toml:12: `nodetype[1].name`", "found `g,pu`"),
    ];
    for (from, to, at, found) in cases {
        assert!(NAMES.contains(from), "{from}");
        let e = Cluster::from_toml(&NAMES.replacen(from, to, 1), "t.toml").unwrap_err().to_string();
        assert_eq!(e, format!("{at}: {expected}, {found}"), "{to}");
    }
}

/// Names printed in tables and published in LDIF hold no control characters.
#[test]
fn names_with_control_characters_are_refused() {
    let cases = [
        ("name = \"mini\"", "name = \"mi\\nni\"", "t.toml:2: `name`: expected a name without control characters, found `mi\\nni`"),
        ("name = \"batch\"", "name = \"bat\\rch\"", "t.toml:17: `partition[0].name`: expected a name without control characters, found `bat\\rch`"),
        ("features = [\"ib\"]", "features = [\"ok\", \"i\\u0000b\"]", "t.toml:8: `nodetype[0].features[1]`: expected a name without control characters, found `i\\u{0}b`"),
        ("network = \"eth\"", "network = \"e\\u009bth\"", "t.toml:9: `nodetype[0].network`: expected a name without control characters, found `e\\u{9b}th`"),
    ];
    for (from, to, want) in cases {
        assert!(NAMES.contains(from), "{from}");
        let e = Cluster::from_toml(&NAMES.replacen(from, to, 1), "t.toml").unwrap_err().to_string();
        assert_eq!(e, want, "{to}");
    }
    // other characters are names
    let fine = NAMES.replace("name = \"mini\"", "name = \"mini cluster, 2 types\"").replace("name = \"batch\"", "name = \"batch jobs\"").replace("\"ib\"", "\"ib-100G\"");
    assert!(Cluster::from_toml(&fine, "t.toml").is_ok());
}

/// A feature a node-set request or a constraint could not name is refused:
/// `ONEOF:FEATURE:a,b` reads `a,b` as two features.
#[test]
fn feature_names_that_requests_cannot_name_are_refused() {
    for bad in ["a,b", "rack:1", "x|y", "[r]", "a&b", "n*2", "(f)", "k=v", "has space", ""] {
        let e = Cluster::from_toml(&NAMES.replacen("features = [\"ib\"]", &format!("features = [{bad:?}]"), 1), "t.toml").unwrap_err().to_string();
        assert!(e.starts_with("t.toml:8: `nodetype[0].features[0]`: expected a feature name without white space"), "{bad:?}: {e}");
    }
    // and a fine one is named by a request
    let c = Cluster::from_toml(&NAMES.replacen("features = [\"ib\"]", "features = [\"ib-100G_v2.1\"]", 1), "t.toml").unwrap();
    assert!(c.node_types.iter().any(|t| t.features == ["ib-100G_v2.1"]));
}

/// A partition that names a node twice would count it twice.
#[test]
fn a_partition_that_lists_a_node_twice_is_refused() {
    let e = Cluster::from_toml(&NAMES.replace("nodetypes = [\"std\", \"gpu\"]", "nodes = \"std[01-02],g1,std01\""), "t.toml").unwrap_err().to_string();
    assert_eq!(e, "t.toml:18: `partition[0].nodes`: node `std01` is listed twice");
    let e = Cluster::from_toml(&NAMES.replace("nodetypes = [\"std\", \"gpu\"]", "nodetypes = [\"std\", \"gpu\", \"std\"]"), "t.toml").unwrap_err().to_string();
    assert_eq!(e, "t.toml:18: `partition[0].nodetypes`: node type `std` is listed twice");
}

proptest! {
    /// What the reader accepts as node names, a hostlist holds: compress then
    /// expand gives the same names back, in order.
    #[test]
    fn host_names_round_trip_through_a_hostlist(names in prop::collection::vec("[a-z,\\[\\] \\t\\n\u{85}\u{2028}-]{0,3}[0-9]{0,3}", 1..12)) {
        let mut seen = std::collections::BTreeSet::new();
        let names: Vec<String> = names.into_iter().filter(|n| hostlist::check_name(n).is_ok() && seen.insert(n.clone())).collect();
        prop_assert_eq!(hostlist::expand(&hostlist::compress(&names)).unwrap_or_default(), names.clone());
    }
}

/// A cluster file of `n` node types of one node each: partition `batch` lists
/// the second half by type, gang partition `gang` the nodes of the first half as
/// a hostlist.
fn many_types(n: usize) -> String {
    let mut s = String::from("name = \"many\"\n");
    for i in 0..n {
        s += &format!("\n[[nodetype]]\nname = \"t{i:05}x\"\ncount = 1\ncores = {}\nmemory = \"8G\"\nfeatures = [\"rack{}\"]\n", 1 + i % 4, i % 100);
    }
    let batch: Vec<String> = (n / 2..n).map(|i| format!("\"t{i:05}x\"")).collect();
    s += &format!("\n[[partition]]\nname = \"batch\"\nnodetypes = [{}]\ndefault = true\n", batch.join(", "));
    let gang: Vec<String> = (0..n / 2).map(|i| format!("t{i:05}x01")).collect();
    s += &format!("\n[[partition]]\nname = \"gang\"\nnodes = \"{}\"\npreempt_mode = \"gang\"\n", hostlist::compress(&gang));
    s
}

/// 20,000 node types parse, and correctly. The checks between node types and
/// partitions (duplicate names, lookups by name, a gang partition's nodes) used
/// to compare every pair, and every node type counted the lines before its own:
/// 16,000 node types took 8 s, and each doubling four times as long.
#[test]
fn twenty_thousand_node_types_parse() {
    let n = 20_000;
    let text = many_types(n);
    let c = Cluster::from_toml(&text, "many.toml").unwrap();
    assert_eq!((c.node_types.len(), c.nodes.len()), (n, n));
    assert_eq!((c.node_types[12_345].name.as_str(), c.nodes[12_345].name.as_str(), c.nodes[12_345].node_type), ("t12345x", "t12345x01", 12_345));
    assert_eq!(c.total_cores(), (0..n as u64).map(|i| 1 + i % 4).sum::<u64>());
    assert_eq!(c.node_types[n - 1].features, ["rack99"]);
    assert_eq!((c.partitions[0].name.as_str(), c.default_partition().name.as_str()), ("batch", "batch"));
    assert_eq!(c.partitions[0].nodes, (n / 2..n).collect::<Vec<_>>());
    assert_eq!(c.partitions[1].nodes, (0..n / 2).collect::<Vec<_>>());

    // the same checks still find what they look for, at the end of the file
    let all: Vec<String> = (0..n).map(|i| format!("\"t{i:05}x\"")).collect();
    let shared = format!("{text}\n[[partition]]\nname = \"all\"\nnodetypes = [{}]\n", all.join(", "));
    let e = Cluster::from_toml(&shared, "many.toml").unwrap_err().to_string();
    let gang_line = text.lines().count();
    assert_eq!(e, format!("many.toml:{gang_line}: `partition[1].nodes`: the nodes of gang partition `gang` must belong to no other partition; `all` shares some"));
    let dup = text.replacen("name = \"t19999x\"", "name = \"t00007x\"", 1);
    let line = dup.lines().enumerate().filter(|(_, l)| *l == "name = \"t00007x\"").nth(1).unwrap().0 + 1;
    let e = Cluster::from_toml(&dup, "many.toml").unwrap_err().to_string();
    assert_eq!(e, format!("many.toml:{line}: `nodetype[19999].name`: node type `t00007x` is defined twice"));
    let dup = format!("{text}\n[[partition]]\nname = \"batch\"\nnodes = \"t00001x01\"\n");
    let e = Cluster::from_toml(&dup, "many.toml").unwrap_err().to_string();
    assert_eq!(e, format!("many.toml:{}: `partition[2].name`: partition `batch` is defined twice", gang_line + 3));
}
