//! A script that starts with a UTF-8 byte-order mark: its directives count,
//! and the copy a node runs starts with its `#!`.

use tessera_controller::request::validate;
use tessera_core::Cluster;

const CLUSTER: &str = "[[nodetype]]\nname = \"n\"\nnodes = \"n[1-4]\"\ncores = 8\nmemory = \"16G\"\n[[partition]]\nname = \"p\"\nnodetypes = [\"n\"]\n";

#[test]
fn a_byte_order_mark_neither_hides_the_directives_nor_reaches_the_node() {
    let c = Cluster::from_toml(CLUSTER, "c.toml").unwrap();
    let mut req = crate::request(&[]);
    req.script = "\u{feff}#!/bin/sh\n#SBATCH -J marked\n#SBATCH -n 3\ntrue\n".into();
    let r = validate(&req, &c, 3600).unwrap();
    assert_eq!((r.name.as_str(), r.procs), ("marked", 3));
    assert!(r.script.starts_with("#!/bin/sh\n"), "{:?}", r.script);
}
