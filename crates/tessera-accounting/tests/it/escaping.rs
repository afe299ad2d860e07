//! Names from outside cannot forge what Tessera publishes: an attribute, an
//! entry or an RDN in GLUE 2 and GLUE 1.3 LDIF, a variable in YAIM, a field or a
//! record in an APEL message. The names are built directly, not read from a
//! cluster file (which refuses them): job, user and account names come from
//! users, the accounting store and traces.

use tessera_accounting::apel::{self, Message, Reporter};
use tessera_accounting::publish::{Capacity, NodeTypeCapacity};
use tessera_accounting::store::{AllocationRecord, JobRecord, NodeRecord, RunInfo, RunKind, Store};
use tessera_core::CanonicalUnit;

/// Names that would add a line, an attribute, an RDN, a record or a shell
/// expansion if written as they are.
const EVIL: [&str; 12] = [
    "c\nobjectClass: evil",
    "t\r\nGLUE2EntityName: evil\n\ndn: o=evil",
    ",GLUE2GroupID=evil+o=x",
    " leading space",
    ":colon",
    "<file:///etc/passwd",
    "trailing ",
    "ünïcode\u{2028}GlueEvil: 1",
    "\"$(touch /tmp/pwned)`id`\\",
    "a%%Site: evil",
    "\u{1b}[2J\u{85}\u{1c}x",
    "#hash;semi<gt>",
];

fn node_type(name: &str, hs06: Option<f64>) -> NodeTypeCapacity {
    NodeTypeCapacity {
        name: name.into(),
        count: 2,
        physical_cpus_per_node: 2,
        logical_cpus_per_node: 8,
        memory_mb: 16_000,
        hs06_per_core: hs06,
        hs06_per_node: hs06.map(|b| 8.0 * b),
        benchmark_type: hs06.map(|_| "hep-spec06"),
        scaling_factor: 1.0,
        torque_cputmult: 1.0,
        torque_wallmult: 1.0,
        glue2_cpu_time_scaling_factor: 1.0,
        glue2_wall_time_scaling_factor: 1.0,
    }
}

fn capacity(cluster: &str, reference: &str, types: &[&str]) -> Capacity {
    Capacity {
        cluster: cluster.into(),
        physical_cpus: 4 * types.len() as u64,
        logical_cpus: 16 * types.len() as u64,
        cores: 4.0,
        benchmark_hs06: 10.0,
        si00: 2500.0,
        cpu_scaling_reference_si00: 2500.0,
        reference: reference.into(),
        total_hs06: 160.0 * types.len() as f64,
        node_types: types.iter().enumerate().map(|(i, t)| node_type(t, (i % 2 == 0).then_some(10.0))).collect(),
    }
}

fn unbase64(s: &str) -> Vec<u8> {
    let val = |c: u8| match c {
        b'A'..=b'Z' => c - b'A',
        b'a'..=b'z' => c - b'a' + 26,
        b'0'..=b'9' => c - b'0' + 52,
        b'+' => 62,
        b'/' => 63,
        _ => panic!("not base64: {s}"),
    };
    let mut out = Vec::new();
    for chunk in s.as_bytes().chunks(4) {
        let data: Vec<u8> = chunk.iter().copied().filter(|&c| c != b'=').collect();
        let n = data.iter().enumerate().fold(0u32, |n, (i, &c)| n | (val(c) as u32) << (18 - 6 * i));
        for i in 0..data.len().saturating_sub(1) {
            out.push((n >> (16 - 8 * i)) as u8);
        }
    }
    out
}

/// LDIF as an LDAP server reads it (RFC 2849): entries separated by empty lines,
/// `attr: value` or `attr:: base64` lines (no line is folded here).
fn parse_ldif(ldif: &str) -> Vec<Vec<(String, String)>> {
    let mut entries = vec![Vec::new()];
    for line in ldif.split('\n') {
        if line.is_empty() {
            entries.push(Vec::new());
            continue;
        }
        assert!(!line.starts_with([' ', '#', '-']), "a continuation, comment or change line: {line:?}");
        assert!(!line.contains('\r'), "{line:?}");
        let (attr, rest) = line.split_once(':').unwrap_or_else(|| panic!("no `:` in {line:?}"));
        let value = match rest.strip_prefix(':') {
            Some(b64) => String::from_utf8(unbase64(b64.trim_start())).unwrap(),
            None => {
                assert!(!rest.starts_with('<'), "a URL value: {line:?}");
                rest.strip_prefix(' ').unwrap_or(rest).to_string()
            }
        };
        assert!(attr.chars().all(|c| c.is_ascii_alphanumeric()), "attribute name {attr:?}");
        entries.last_mut().unwrap().push((attr.to_string(), value));
    }
    entries.retain(|e| !e.is_empty());
    entries
}

/// A DN's RDNs (RFC 4514), each as (attribute type, unescaped value); a `+`
/// (a multi-valued RDN) is refused.
fn parse_dn(dn: &str) -> Vec<(String, String)> {
    let mut rdns = Vec::new();
    let (mut ty, mut val, mut in_value) = (String::new(), Vec::<u8>::new(), false);
    let b = dn.as_bytes();
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'\\' => {
                let hex = b.get(i + 1..i + 3).and_then(|h| std::str::from_utf8(h).ok()).and_then(|h| u8::from_str_radix(h, 16).ok());
                match hex {
                    Some(x) => {
                        val.push(x);
                        i += 3;
                    }
                    None => {
                        val.push(b[i + 1]);
                        i += 2;
                    }
                }
                continue;
            }
            b'+' => panic!("a multi-valued RDN in {dn:?}"),
            b',' => {
                rdns.push((std::mem::take(&mut ty), String::from_utf8(std::mem::take(&mut val)).unwrap()));
                in_value = false;
            }
            b'=' if !in_value => in_value = true,
            b'=' => panic!("an unescaped `=` in a value of {dn:?}"),
            c if in_value => val.push(c),
            c => ty.push(c as char),
        }
        i += 1;
    }
    rdns.push((ty, String::from_utf8(val).unwrap()));
    rdns
}

/// The shape of an LDIF file: per entry, its DN's attribute types and its
/// attribute names in order.
fn shape(entries: &[Vec<(String, String)>]) -> Vec<(Vec<String>, Vec<String>)> {
    entries
        .iter()
        .map(|e| {
            assert_eq!(e[0].0, "dn", "an entry starts with its dn: {e:?}");
            (parse_dn(&e[0].1).into_iter().map(|r| r.0).collect(), e.iter().map(|a| a.0.clone()).collect())
        })
        .collect()
}

fn value<'a>(entry: &'a [(String, String)], attr: &str) -> &'a str {
    &entry.iter().find(|a| a.0 == attr).unwrap_or_else(|| panic!("no {attr} in {entry:?}")).1
}

#[test]
fn a_name_cannot_add_an_attribute_an_entry_or_an_rdn_to_glue2() {
    let clean_types: Vec<String> = (0..EVIL.len()).map(|i| format!("type{i}")).collect();
    let clean = capacity("cluster", "ref", &clean_types.iter().map(String::as_str).collect::<Vec<_>>());
    let want = shape(&parse_ldif(&clean.glue2()));
    for cluster in EVIL {
        let evil = capacity(cluster, cluster, &EVIL);
        let ldif = evil.glue2();
        let entries = parse_ldif(&ldif);
        assert_eq!(shape(&entries), want, "cluster {cluster:?}:\n{ldif}");
        assert!(!entries.iter().flatten().any(|(k, v)| k == "objectClass" && v == "evil"), "{ldif}");
        // the values and the DNs carry the names exactly
        let mgr = format!("{cluster}-manager");
        assert_eq!(value(&entries[0], "GLUE2ManagerID"), mgr);
        assert_eq!(parse_dn(value(&entries[0], "dn"))[0], ("GLUE2ManagerID".to_string(), mgr));
        let environments: Vec<_> = entries.iter().filter(|e| e.iter().any(|a| a == &("objectClass".to_string(), "GLUE2ExecutionEnvironment".to_string()))).collect();
        assert_eq!(environments.len(), EVIL.len());
        for (e, t) in environments.iter().zip(EVIL) {
            assert_eq!(value(e, "GLUE2EntityName"), t);
            assert_eq!(value(e, "GLUE2ResourceID"), format!("{cluster}-{t}"));
            assert_eq!(parse_dn(value(e, "dn"))[0].1, format!("{cluster}-{t}"));
        }
    }
}

#[test]
fn a_name_cannot_add_an_attribute_or_an_entry_to_glue13_or_a_variable_to_yaim() {
    let want13 = shape(&parse_ldif(&capacity("cluster", "ref", &["t"]).glue13()));
    let want_yaim: Vec<String> = capacity("cluster", "ref", &["t"]).yaim().lines().map(|l| l.split('=').next().unwrap().to_string()).collect();
    for name in EVIL {
        let c = capacity(name, name, &[name]);
        let ldif = c.glue13();
        let entries = parse_ldif(&ldif);
        assert_eq!(shape(&entries), want13, "{name:?}:\n{ldif}");
        assert_eq!(value(&entries[0], "GlueSubClusterUniqueID"), name);
        assert_eq!(value(&entries[0], "GlueChunkKey"), format!("GlueClusterUniqueID={name}"));
        assert_eq!(parse_dn(value(&entries[0], "dn"))[..2], [("GlueSubClusterUniqueID".to_string(), name.to_string()), ("GlueClusterUniqueID".to_string(), name.to_string())]);
        assert_eq!(value(&entries[1], "GlueCEUniqueID"), format!("{name}-ce"));
        // YAIM: the same variables, one a line, each `NAME=` a number or a double-quoted word
        let yaim = c.yaim();
        let vars: Vec<String> = yaim.lines().map(|l| l.split('=').next().unwrap().to_string()).collect();
        assert_eq!(vars, want_yaim, "{yaim}");
        for line in yaim.lines() {
            let v = line.split_once('=').unwrap().1;
            assert!(v.parse::<f64>().is_ok() || (v.starts_with('"') && v.ends_with('"') && !v[1..v.len() - 1].contains(['"', '$', '`'])), "{line}");
        }
        // text: one line per node type
        assert_eq!(c.text().lines().count(), capacity("cluster", "ref", &["t"]).text().lines().count(), "{}", c.text());
    }
}

/// Python's `str.splitlines`, which the APEL loader splits records with.
fn python_lines(s: &str) -> Vec<&str> {
    s.split(['\n', '\r', '\u{b}', '\u{c}', '\u{1c}', '\u{1d}', '\u{1e}', '\u{85}', '\u{2028}', '\u{2029}']).filter(|l| !l.is_empty()).collect()
}

/// An APEL message as the loader reads it (`RecordFactory`, `Record.load_from_msg`):
/// records split at every `%%`, lines with `splitlines`, keys before the first `:`.
fn apel_records(msg: &str) -> Vec<Vec<(String, String)>> {
    let body = msg.trim().split_once('\n').unwrap().1;
    body.split("%%")
        .filter(|r| !r.trim().is_empty())
        .map(|r| {
            python_lines(r.trim())
                .into_iter()
                .map(|l| {
                    let (k, v) = l.split_once(':').unwrap_or_else(|| panic!("a line without a key: {l:?}"));
                    (k.trim().to_string(), v.trim().to_string())
                })
                .collect()
        })
        .collect()
}

/// One run of three jobs whose names, users, accounts and partitions are `names`.
fn record(store: &mut Store, names: [&str; 3], site: &str) -> i64 {
    let node = NodeRecord {
        name: names[0].into(),
        node_type: names[1].into(),
        partition: names[2].into(),
        cores: 8,
        memory_mb: 16_000,
        gpus: 0,
        hs06_per_core: Some(10.0),
        factor: 1.0,
        unit: CanonicalUnit { cores: 1, memory_mb: 0, gpus: 0 },
        valid_from: 0,
    };
    let run = RunInfo { kind: RunKind::Simulation, label: names[0].into(), site: site.into(), cluster: names[1].into(), policy: "fcfs".into(), epoch_offset: 1_700_000_000, recorded_at: 0 };
    let jobs = (0..3).map(|i| JobRecord {
        name: names[i as usize].into(),
        user: names[(i as usize + 1) % 3].into(),
        group: names[(i as usize + 2) % 3].into(),
        account: names[i as usize].into(),
        partition: names[(i as usize + 1) % 3].into(),
        ..JobRecord::completed(i + 1, 0, 0, 100, vec![AllocationRecord { node: 0, cores: 1, memory_mb: 100, gpus: 0 }])
    });
    store.record_run(&run, &[node], jobs).unwrap()
}

#[test]
fn a_name_cannot_add_a_field_or_a_record_to_an_apel_message() {
    let mut store = Store::in_memory().unwrap();
    let clean_run = record(&mut store, ["name0", "name1", "name2"], "SITE");
    let clean_who = Reporter { site: "SITE".into(), submit_host: "SITE-ce".into(), machine: "cluster".into() };
    for names in EVIL.chunks(3) {
        let names: [&str; 3] = names.try_into().unwrap();
        let run = record(&mut store, names, names[0]);
        let who = Reporter { site: names[0].into(), submit_host: names[1].into(), machine: names[2].into() };
        for kind in [Message::Individual03, Message::Individual04, Message::Summary02, Message::Summary04, Message::Normalised03, Message::Normalised04, Message::Sync01] {
            let want = apel_records(&apel::export(&store, clean_run, kind, &clean_who).unwrap());
            let msg = apel::export(&store, run, kind, &who).unwrap();
            let got = apel_records(&msg);
            let keys = |rs: &[Vec<(String, String)>]| rs.iter().map(|r| r.iter().map(|f| f.0.clone()).collect::<Vec<_>>()).collect::<Vec<_>>();
            assert_eq!(keys(&got), keys(&want), "{kind:?} {names:?}:\n{msg}");
            assert_eq!(apel::validate(&msg), Ok(want.len()), "{kind:?}:\n{msg}");
            // only what the loader would strip or read as an escape differs
            for r in &got {
                for (k, v) in r {
                    assert!(!v.contains(['%', '\u{1b}']), "{k}: {v:?}");
                }
            }
        }
    }
}
