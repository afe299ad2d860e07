//! Names from outside through the binary: a job name, user and account in the
//! accounting store cannot add a row or a column to `tessera acct`, its `-P`
//! listing or a CSV report, nor a field or a record to an APEL message.

use crate::common::{tessera, text};

fn ok(args: &[&str]) -> String {
    let out = tessera(args);
    assert!(out.status.success(), "tessera {args:?}: {}", text(&out.stderr));
    String::from_utf8(out.stdout).unwrap()
}

/// Python's `str.splitlines` boundaries: the most line breaks any reader knows.
const BREAKS: [char; 10] = ['\n', '\r', '\u{b}', '\u{c}', '\u{1c}', '\u{1d}', '\u{1e}', '\u{85}', '\u{2028}', '\u{2029}'];

fn lines(s: &str) -> Vec<&str> {
    s.trim_end_matches('\n').split(BREAKS).collect()
}

#[test]
fn names_in_the_store_cannot_forge_acct_rows_columns_or_apel_records() {
    let dir = tempfile::tempdir().unwrap();
    let cluster = dir.path().join("c.toml");
    std::fs::write(&cluster, "[[nodetype]]\nname = \"n\"\nnodes = \"n[1-2]\"\ncores = 4\n").unwrap();
    let trace = dir.path().join("t.swf");
    std::fs::write(&trace, "; MaxProcs: 8\n1 0 -1 60 1 -1 -1 1 60 -1 1 1 1 -1 1 -1 -1 -1\n2 0 -1 60 1 -1 -1 1 60 -1 1 2 2 -1 1 -1 -1 -1\n3 0 -1 60 1 -1 -1 1 60 -1 1 3 3 -1 1 -1 -1 -1\n").unwrap();
    let db = dir.path().join("acct.db");
    let d = db.to_str().unwrap();
    ok(&["sim", "run", "--trace", trace.to_str().unwrap(), "--cluster", cluster.to_str().unwrap(), "--db", d, "--format", "json"]);
    // as a user could name a job, and an account store could hold it
    let c = rusqlite::Connection::open(&db).unwrap();
    c.execute("UPDATE jobs SET name = ?1, user = ?2, account = ?3 WHERE job_id = 1", ["x\n9999 fake row", "a|b", "acc%%Site: evil\r\nVO: evil"]).unwrap();
    c.execute("UPDATE jobs SET name = ?1, user = ?2 WHERE job_id = 2", ["\u{1b}[2Jname\u{2028}", "u,\"v\""]).unwrap();
    drop(c);

    let p = ok(&["acct", "--db", d, "-P", "-o", "JobID,JobName,User,Account,State"]);
    let ls = lines(&p);
    assert_eq!(ls.len(), 4, "{p}");
    assert!(ls.iter().all(|l| l.matches('|').count() == 4), "{p}");
    assert!(ls[1].starts_with("1|x\\n9999 fake row|a\\x7cb|"), "{p}");
    let p1 = ok(&["acct", "--db", d, "-p", "-o", "JobID,JobName,User"]);
    assert!(lines(&p1).iter().all(|l| l.matches('|').count() == 3), "{p1}");
    let columns = ok(&["acct", "--db", d, "-o", "JobID,JobName,User,Account"]);
    assert_eq!(lines(&columns).len(), 5, "{columns}");
    assert!(!columns.contains(|c: char| c.is_control() && c != '\n'), "{columns}");

    let csv = ok(&["report", "usage", "--db", d, "--by", "user", "--format", "csv"]);
    assert_eq!(lines(&csv).len(), 4, "{csv}");
    assert!(csv.contains("\na|b,") && csv.contains("\n\"u,\"\"v\"\"\","), "{csv}");
    let table = ok(&["report", "usage", "--db", d, "--by", "account"]);
    assert!(!table.contains(['\r', '\u{1b}']) && table.contains("acc%%Site: evil\\r\\nVO: evil"), "{table}");

    for kind in ["individual", "summary", "sync"] {
        let msg = ok(&["acct", "apel", "--db", d, "--type", kind]);
        let n = tessera_accounting::apel::validate(&msg).unwrap_or_else(|e| panic!("{kind}: {e}\n{msg}"));
        // the loader's view: records at every `%%`, a field per line
        let records: Vec<&str> = msg.split_once('\n').unwrap().1.split("%%").filter(|r| !r.trim().is_empty()).collect();
        assert_eq!(records.len(), n, "{msg}");
        assert!(!msg.contains("\nVO: evil") && !msg.contains("\nSite: evil"), "{msg}");
        if kind == "individual" {
            assert_eq!(n, 3);
            assert!(msg.contains("LocalUserId: a|b\n") && msg.contains("VO: acc\\x25\\x25Site: evil\\r\\nVO: evil\n"), "{msg}");
        }
    }
}
