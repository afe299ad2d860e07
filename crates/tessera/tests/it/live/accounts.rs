//! Accounts live: a cluster file with accounts, QOS and a limit. Jobs charge
//! the account they name (`-A`, `#SBATCH --account`) or their user's default;
//! an unknown account or QOS is refused at submission with the option named;
//! a MaxJobs limit holds a job with Slurm's reason and lets it go; the
//! accounting store names each job's account.

use super::Live;
use tessera_proto::api::JobStateCode;

fn user() -> String {
    let o = std::process::Command::new("id").arg("-un").output().unwrap();
    String::from_utf8_lossy(&o.stdout).trim().to_string()
}

fn cluster(user: &str) -> String {
    format!(
        r#"
name = "shared"

[[nodetype]]
name = "n"
nodes = "node[001-002]"
cores = 2

[[partition]]
name = "batch"
nodes = "node[001-002]"

[priority]
type = "multifactor"

[[qos]]
name = "normal"

[[qos]]
name = "high"
priority = 100

[[account]]
name = "physics"
shares = 3

[[account]]
name = "chem"

[[user]]
name = "{user}"
accounts = ["physics", "chem"]
default_account = "physics"
max_jobs = 1
"#
    )
}

#[test]
fn jobs_charge_their_account_and_limits_hold_them_with_slurms_reason() {
    let me = user();
    let mut l = Live::start_on(1, 10, Some((&cluster(&me), 2)));
    // refused at submission, the option named
    for (args, option, what) in [(vec!["-A", "maths"], "--account", "unknown account maths"), (vec!["--qos", "gold"], "--qos", "unknown QOS gold")] {
        let o = l.cli(&[&["job", "submit"], &args[..], &["--wrap", "true"]].concat());
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(!o.status.success() && err.contains(option) && err.contains(what), "{args:?}: {err}");
    }
    // two jobs of the user's default account, the second held by its
    // MaxJobs = 1; a job of chem, named in the script, runs beside them
    let first = l.submit(&["-t", "1:00", "--wrap", "sleep 3"]);
    let second = l.submit(&["-t", "1:00", "--wrap", "sleep 1"]);
    let script = l.dir.path().join("chem.sh");
    std::fs::write(&script, "#!/bin/sh\n#SBATCH --account=chem\n#SBATCH --qos=high\nsleep 1\n").unwrap();
    let third = l.submit(&["-t", "1:00", script.to_str().unwrap()]);
    l.wait_for("the first job running", 20, |l| l.job(first).is_some_and(|j| j.state == JobStateCode::Running));
    l.wait_for("the second held by the limit", 20, |l| l.job(second).is_some_and(|j| j.state == JobStateCode::Pending && j.reason == "AssocMaxJobsLimit"));
    // sprio: the pending job's factors; sshare: the tree, the user under both accounts
    let prio = String::from_utf8_lossy(&l.cli(&["prio"]).stdout).to_string();
    let line = prio.lines().find(|x| x.trim_start().starts_with(&second.to_string())).unwrap_or_else(|| panic!("{prio}"));
    assert!(line.contains("physics") && line.contains("normal") && line.contains(&me), "{prio}");
    let share = String::from_utf8_lossy(&l.cli(&["share", "-l"]).stdout).to_string();
    assert!(share.starts_with("Account") && share.contains("LevelFS"), "{share}");
    for (account, shares) in [(" physics", " 3 "), (" chem", " 1 ")] {
        assert!(share.lines().any(|x| x.starts_with(account) && x.contains(&me) && x.contains(shares)) || share.lines().any(|x| x.starts_with(account) && x.contains(shares)), "{account}: {share}");
    }
    let o = l.cli(&["share", "--json"]);
    let rows: Vec<tessera_proto::api::ShareRow> = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(rows[0].account, "root");
    assert!(rows.iter().any(|r| r.account == "physics" && r.user.as_deref() == Some(me.as_str()) && r.fairshare > 0.0), "{rows:?}");
    l.wait_for("every job completed", 30, |l| [first, second, third].iter().all(|&j| l.job(j).is_some_and(|x| x.state == JobStateCode::Completed)));
    let start = |j: u64| l.job(j).and_then(|x| x.start).unwrap();
    assert!(start(second) >= start(first) + 3, "the second ran after the first ended");
    let o = l.cli(&["acct", "-P", "-X", "-o", "JobID,Account,State"]);
    let acct = String::from_utf8_lossy(&o.stdout).to_string();
    for (j, account) in [(first, "physics"), (second, "physics"), (third, "chem")] {
        assert!(acct.contains(&format!("{j}|{account}|COMPLETED")), "{acct}");
    }
    // an operator adds an account, an association and a QOS live (sacctmgr's
    // words); a job charges them; the change survives a kill -9
    let ok = |o: std::process::Output| {
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        String::from_utf8_lossy(&o.stdout).to_string()
    };
    ok(l.cli(&["account", "add", "account", "bio", "Parent=root", "Fairshare=2"]));
    ok(l.cli(&["account", "add", "user", &me, "Account=bio", "MaxJobs=2"]));
    ok(l.cli(&["account", "add", "qos", "urgent", "Priority=500", "MaxJobsPerUser=3"]));
    let bad = l.cli(&["account", "delete", "account", "nope"]);
    assert!(!bad.status.success() && String::from_utf8_lossy(&bad.stderr).contains("no account nope"), "{}", String::from_utf8_lossy(&bad.stderr));
    let bio = l.submit(&["-A", "bio", "--qos", "urgent", "-t", "1:00", "--wrap", "true"]);
    l.wait_for("the bio job completed", 20, |l| l.job(bio).is_some_and(|x| x.state == JobStateCode::Completed));
    l.kill9_controller();
    l.start_controller();
    let shown = ok(l.cli(&["account", "show"]));
    assert!(shown.lines().any(|x| x.trim_start().starts_with("bio") && x.contains(&me)), "{shown}");
    let qos = ok(l.cli(&["account", "show", "qos"]));
    assert!(qos.lines().any(|x| x.starts_with("urgent") && x.contains(" 500 ") && x.contains(" 3 ")), "{qos}");
    let o = l.cli(&["acct", "-P", "-X", "-o", "JobID,Account"]);
    assert!(String::from_utf8_lossy(&o.stdout).contains(&format!("{bio}|bio")));
}
