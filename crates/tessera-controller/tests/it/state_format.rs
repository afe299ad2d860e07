//! A state directory written by an earlier build comes back as it was, or is
//! refused; never misread.
//!
//! `tests/fixtures/state/format-N/` holds a `state.db` of state format N
//! (`journal::STATE_FORMAT`; format 0 is every state written before formats
//! were recorded), written by the controller's own journal and state code (a
//! snapshot, then journal entries after it: submitted, running, suspended,
//! held, finished and cancelled jobs, a drained node, a lost agent, a changed
//! cluster file), and `jobs.json`, the jobs as `GET /v1/jobs` listed them when
//! it was written. Every fixture is opened (a copy) as the controller opens a
//! state directory (`Actor::open`: snapshot restored, journal replayed), and
//! its jobs must be listed as they were; every row of every fixture, upgraded
//! to this build's format, must decode into `State` or `Event` and encode back
//! to the same JSON (nothing dropped, renamed or defaulted on the way).
//!
//! **When the layout of `State` or `Event` changes** (a field renamed, added,
//! removed or moved; `engine` made private changes nothing, what it
//! serializes to does), `every_row_of_every_fixture_reads_back_as_written`
//! fails. Then:
//!
//! 1. append an upgrade to `UPGRADES` in `src/journal.rs` (which bumps
//!    `STATE_FORMAT`): it rewrites the JSON of the previous format into the new
//!    layout, or refuses it with the reason (then list the formats it cuts off
//!    in [`REFUSED`]);
//! 2. run `scripts/regen-state-fixture`, which writes the new format's
//!    directory `format-N` (`the_current_formats_fixture_is_what_this_build_writes`
//!    with `TESSERA_REGEN_STATE_FIXTURE=1`; without it, the test checks the
//!    checked-in directory is what this build writes)
//!    and never rewrites an older format's: those stay as the record of what
//!    earlier builds wrote;
//! 3. commit the new directory.

use std::path::{Path, PathBuf};
use tessera_controller::actor::{Actor, Msg, MAX_BATCH};
use tessera_controller::journal::{upgrade, Journal, Stored, STATE_FORMAT};
use tessera_controller::request::validate;
use tessera_controller::state::{Event, State};
use tessera_controller::Config;
use tessera_core::{Cluster, Engine, NodeChange, PolicyKind};
use tessera_proto::api::{JobExit, JobInfo, OptionArg, SubmitRequest};

const CLUSTER: &str = include_str!("../../../../examples/clusters/default.toml");
const CLUSTER_PATH: &str = "examples/clusters/default.toml";
/// When the fixture's state directory was created (a fixed instant).
const T0: i64 = 1_750_000_000;

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/state")
}

fn submit(c: &Cluster, first: u64, user: (&str, u32), opts: &[(&str, &str)], key: Option<&str>) -> Event {
    let req = SubmitRequest {
        script: format!("#!/bin/sh\n#SBATCH --mem-per-cpu=1G\necho job {first}\nsleep 60\n"),
        options: opts.iter().map(|(o, v)| OptionArg { option: o.to_string(), value: v.to_string() }).collect(),
        workdir: format!("/home/{}", user.0),
        env: [("HOME".to_string(), format!("/home/{}", user.0)), ("PATH".to_string(), "/usr/bin:/bin".to_string())].into_iter().collect(),
        script_name: Some("fixture.sh".into()),
        idempotency_key: key.map(String::from),
    };
    Event::Submit { first, user: user.0.into(), uid: user.1, gid: user.1, req: Box::new(validate(&req, c, 3600).unwrap()) }
}

fn ended(job: u64, attempt: u32, code: i32, start: i64, end: i64) -> Event {
    Event::Ended(JobExit { job, attempt, code: Some(code), signal: None, cpu_s: 2.5, start, end, limit_hit: false, failure: None, usage: None })
}

fn killed(job: u64, attempt: u32, start: i64, end: i64) -> Event {
    Event::Ended(JobExit { job, attempt, code: None, signal: Some(9), cpu_s: 1.0, start, end, limit_hit: false, failure: None, usage: None })
}

/// The fixture's history: (instant, batch), and after which batch the
/// snapshot is taken (the batches after it stay in the journal).
fn scenario(c: &Cluster) -> (Vec<(i64, Vec<Event>)>, usize) {
    let (alice, bob) = (("alice", 1001), ("bob", 1002));
    let grown = CLUSTER.replace("node[001-032]", "node[001-033]");
    let batches = vec![
        (T0, vec![Event::AgentUp { agent: "agent1".into(), nodes: (0..16).collect() }, Event::AgentUp { agent: "agent2".into(), nodes: (16..32).collect() }]),
        (
            T0 + 1,
            vec![
                submit(c, 1, alice, &[("-n", "64"), ("-J", "big")], None),
                submit(c, 2, bob, &[("-n", "8"), ("--requeue", "")], None),
                submit(c, 3, alice, &[("-n", "256"), ("-t", "2:00:00")], None),
            ],
        ),
        (T0 + 2, vec![submit(c, 4, bob, &[("-n", "8"), ("--array", "0-3%2"), ("-o", "arr-%A_%a.out")], None), submit(c, 8, alice, &[("-n", "136"), ("-d", "afterok:1")], None)]),
        (
            T0 + 3,
            vec![
                submit(c, 9, bob, &[("-n", "16"), ("--hold", "")], Some("fixture-key")),
                // a job with its own node-set request
                submit(c, 13, bob, &[("-n", "8"), ("--nodeset", "ONEOF:MEMORY")], None),
                Event::PassLater,
            ],
        ),
        (T0 + 3, vec![]),
        (T0 + 10, vec![ended(1, 1, 0, T0 + 1, T0 + 10)]),
        (T0 + 11, vec![Event::Node { node: 31, change: NodeChange::Drain, reason: "fixture: drained".into() }, Event::Cancel(3)]),
        // the snapshot is taken here; what follows stays in the journal
        (T0 + 20, vec![ended(2, 1, 3, T0 + 1, T0 + 20), Event::Suspend(4), submit(c, 10, alice, &[("-n", "256")], None)]),
        (T0 + 21, vec![Event::Hold(10), Event::Release(9)]),
        (T0 + 22, vec![Event::Requeue(5)]),
        (T0 + 30, vec![Event::AgentLost { agent: "agent2".into() }]),
        (T0 + 31, vec![Event::Reconfigure { toml: grown, path: "grown.toml".into() }]),
        (T0 + 32, vec![Event::AgentUp { agent: "agent2".into(), nodes: (16..33).collect() }, Event::Resume(4)]),
        (T0 + 40, vec![submit(c, 11, alice, &[("-n", "4"), ("-J", "late")], None), submit(c, 12, bob, &[("-n", "256")], None)]),
        (T0 + 50, vec![killed(8, 1, T0 + 11, T0 + 31), killed(9, 1, T0 + 21, T0 + 31), killed(5, 1, T0 + 11, T0 + 23), Event::Suspend(11)]),
        (T0 + 60, vec![Event::Node { node: 32, change: NodeChange::Drain, reason: "fixture: new node".into() }, Event::Cancel(7), Event::PassLater]),
        (T0 + 60, vec![]),
    ];
    (batches, 7)
}

/// The jobs as `GET /v1/jobs` lists them.
fn listing(s: &mut State, c: &Cluster) -> Vec<JobInfo> {
    let mut v: Vec<JobInfo> = s.live_ids().into_iter().filter_map(|id| s.job_info(c, id)).collect();
    v.extend(s.ledger.done.values().map(|d| d.info.clone()));
    v
}

/// Write the fixture's `state.db` (settings, snapshot, journal) as the
/// controller does, into `dir`; the jobs listed at the end.
fn write_fixture(dir: &Path) -> Vec<JobInfo> {
    std::fs::create_dir_all(dir).unwrap();
    let db = dir.join("state.db");
    for f in ["state.db", "state.db-wal", "state.db-shm"] {
        let _ = std::fs::remove_file(dir.join(f));
    }
    let mut c = Cluster::from_toml(CLUSTER, CLUSTER_PATH).unwrap();
    let mut journal = Journal::open(&db).unwrap();
    // the settings `Actor::open` writes on a first start
    journal.set_setting("cluster", CLUSTER).unwrap();
    journal.set_setting("cluster_path", CLUSTER_PATH).unwrap();
    journal.set_setting("policy", "easy").unwrap();
    journal.set_setting("created", &T0.to_string()).unwrap();
    let mut s = State::new(Engine::with_cluster(PolicyKind::Easy, &c).unwrap(), &c, T0, 5);
    let (batches, snapshot_after) = scenario(&c);
    let mut out = Vec::new();
    for (k, (now, events)) in batches.iter().enumerate() {
        journal.append(*now, events).unwrap();
        s.apply(&mut c, *now, events, &mut out);
        s.engine().sanity_check();
        if k + 1 == snapshot_after {
            journal.snapshot(&s).unwrap();
        }
    }
    drop(journal);
    listing(&mut s, &c)
}

fn config(dir: &Path) -> Config {
    Config {
        parm: None,
        state_dir: dir.to_path_buf(),
        cluster_toml: String::new(),
        cluster_path: String::new(),
        policy: PolicyKind::Easy,
        listen: "127.0.0.1:0".parse().unwrap(),
        heartbeat_timeout_s: 10,
        kill_grace_s: 5,
        default_limit_s: 3600,
        operators: Vec::new(),
        site: "fixture".into(),
        max_batch: MAX_BATCH,
        coalesce_ms: 0,
    }
}

/// A copy of fixture directory `name` in a temp dir (the checked-in files are
/// never opened for writing).
fn copy_of(name: &str) -> tempfile::TempDir {
    let t = tempfile::tempdir().unwrap();
    std::fs::copy(fixtures().join(name).join("state.db"), t.path().join("state.db")).unwrap();
    t
}

/// Open the state directory `dir` as the controller does and list its jobs
/// (the listing is answered from the state as restored, before any pass).
fn restored_jobs(dir: &Path) -> anyhow::Result<Vec<JobInfo>> {
    let actor = Actor::open(config(dir))?;
    let (tx, rx) = std::sync::mpsc::channel();
    let (reply, listed) = tokio::sync::oneshot::channel();
    tx.send(Msg::Jobs { reply }).unwrap();
    tx.send(Msg::Shutdown).unwrap();
    actor.run(rx)?;
    listed.blocking_recv().unwrap().map_err(|e| anyhow::anyhow!("{}", e.body.error))
}

/// Every field of every job in `expected` (as JSON) is as listed in `got`.
fn assert_same_jobs(fixture: &str, expected: &serde_json::Value, got: &[JobInfo]) {
    let got = serde_json::to_value(got).unwrap();
    let (want, got) = (expected.as_array().unwrap(), got.as_array().unwrap());
    let ids = |v: &[serde_json::Value]| v.iter().map(|j| j["id"].as_u64().unwrap()).collect::<Vec<_>>();
    assert_eq!(ids(got), ids(want), "{fixture}: the same jobs, in the same order");
    for (w, g) in want.iter().zip(got) {
        for (field, value) in w.as_object().unwrap() {
            assert_eq!(&g[field], value, "{fixture}: job {} field {field}", w["id"]);
        }
    }
}

/// State formats this build refuses by design (an upgrade in `UPGRADES`
/// refuses them); every other fixture must come back as it was.
const REFUSED: &[i64] = &[];

/// Every fixture directory's format, oldest first.
fn fixture_formats() -> Vec<i64> {
    let mut v: Vec<i64> = std::fs::read_dir(fixtures())
        .unwrap()
        .filter_map(|e| e.ok()?.file_name().to_str()?.strip_prefix("format-")?.parse().ok())
        .collect();
    v.sort();
    v
}

#[test]
fn every_fixture_state_directory_is_restored_with_its_jobs_as_they_were() {
    let formats = fixture_formats();
    assert_eq!(formats, (0..=STATE_FORMAT).collect::<Vec<_>>(), "a fixture of every state format up to this build's ({STATE_FORMAT}): scripts/regen-state-fixture writes it");
    for format in formats {
        let name = format!("format-{format}");
        let expected: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(fixtures().join(&name).join("jobs.json")).unwrap()).unwrap();
        // the fixture holds what it claims: jobs in every state, a snapshot and journal entries after it
        let states: Vec<&str> = expected.as_array().unwrap().iter().map(|j| j["state"].as_str().unwrap()).collect();
        for st in ["COMPLETED", "FAILED", "CANCELLED", "NODE_FAIL", "RUNNING", "PENDING", "SUSPENDED"] {
            assert!(states.contains(&st), "{name}: no {st} job in {states:?}");
        }
        let dir = copy_of(&name);
        let rows = rows(&dir.path().join("state.db"));
        assert!(rows.iter().any(|r| r.0 == Stored::Snapshot) && rows.iter().any(|r| r.0 == Stored::Events), "{name}: a snapshot and journal entries after it");
        assert!(rows.iter().all(|r| r.1 == format), "{name}: every row is of format {format}");
        match restored_jobs(dir.path()) {
            Ok(got) => {
                assert!(!REFUSED.contains(&format), "{name}: refused by design (REFUSED), yet read");
                assert_same_jobs(&name, &expected, &got);
            }
            Err(e) => {
                assert!(REFUSED.contains(&format), "{name}: {e:#}");
                let e = format!("{e:#}");
                assert!(e.contains(&format!("state format {format}")) && e.contains(&format!("state format {STATE_FORMAT}")), "{name}: the refusal names both formats: {e}");
            }
        }
    }
}

/// The rows of a state database: (what, format, sequence number, JSON text).
fn rows(db: &Path) -> Vec<(Stored, i64, i64, String)> {
    let conn = rusqlite::Connection::open(db).unwrap();
    let has_format = |table: &str| conn.prepare(&format!("SELECT format FROM {table}")).is_ok();
    let format = |table: &str| if has_format(table) { "format" } else { "0" };
    let mut v = Vec::new();
    let mut q = conn.prepare(&format!("SELECT seq, state, {} FROM snapshot", format("snapshot"))).unwrap();
    v.extend(q.query_map([], |r| Ok((Stored::Snapshot, r.get(2)?, r.get(0)?, r.get(1)?))).unwrap().map(Result::unwrap));
    let mut q = conn.prepare(&format!("SELECT seq, events, {} FROM journal ORDER BY seq", format("journal"))).unwrap();
    v.extend(q.query_map([], |r| Ok((Stored::Events, r.get(2)?, r.get(0)?, r.get(1)?))).unwrap().map(Result::unwrap));
    v
}

/// Each row of the state database `db` that this build reads, upgraded to its
/// format, decodes and encodes back to the same JSON; else the first that
/// does not, and how.
fn reads_back_as_written(db: &Path) -> Result<(), String> {
    for (what, format, seq, text) in rows(db) {
        if REFUSED.contains(&format) {
            continue;
        }
        let v = upgrade(what, format, &text).map_err(|why| format!("{what:?} {seq} of format {format}: not upgraded ({why:?})"))?;
        let again = match what {
            Stored::Snapshot => serde_json::from_value::<State>(v.clone()).map(|s| {
                // an upgraded engine holds its invariants (set lists counted
                // by their users, own node-set requests of live jobs only)
                s.engine().sanity_check();
                serde_json::to_value(s).unwrap()
            }),
            Stored::Events => serde_json::from_value::<Vec<Event>>(v.clone()).map(|e| serde_json::to_value(e).unwrap()),
        }
        .map_err(|e| format!("{what:?} {seq} of format {format}: does not decode: {e}"))?;
        if again != v {
            return Err(format!("{what:?} {seq} of format {format}: decoded and encoded again, it differs:\n{}", first_difference("", &v, &again)));
        }
    }
    Ok(())
}

/// Where two JSON values first differ (a path, and each side there).
fn first_difference(path: &str, a: &serde_json::Value, b: &serde_json::Value) -> String {
    use serde_json::Value::{Array, Object};
    match (a, b) {
        (Object(x), Object(y)) => {
            for k in x.keys().chain(y.keys()) {
                match (x.get(k), y.get(k)) {
                    (Some(p), Some(q)) if p == q => {}
                    (Some(p), Some(q)) => return first_difference(&format!("{path}.{k}"), p, q),
                    (p, q) => return format!("{path}.{k}: stored {}, read back {}", p.map_or("nothing".into(), |v| v.to_string()), q.map_or("nothing".into(), |v| v.to_string())),
                }
            }
            String::new()
        }
        (Array(x), Array(y)) if x.len() == y.len() => x.iter().zip(y).enumerate().find(|(_, (p, q))| p != q).map_or(String::new(), |(i, (p, q))| first_difference(&format!("{path}[{i}]"), p, q)),
        _ => format!("{path}: stored {a}, read back {b}"),
    }
}

/// The guard on the layout: what `State` and `Event` serialize to is what
/// every fixture's rows hold, once upgraded. Changing the layout without an
/// upgrade fails here (see the module's documentation for what to do).
#[test]
fn every_row_of_every_fixture_reads_back_as_written() {
    for format in fixture_formats() {
        if let Err(e) = reads_back_as_written(&fixtures().join(format!("format-{format}")).join("state.db")) {
            panic!(
                "fixture format-{format}: {e}\n\nThe layout of the controller's State or Event changed. Append an upgrade to UPGRADES in \
                 crates/tessera-controller/src/journal.rs (it bumps STATE_FORMAT, now {STATE_FORMAT}), then run scripts/regen-state-fixture \
                 and commit the new fixture directory (see tests/it/state_format.rs)."
            );
        }
    }
}

/// A state written by a newer Tessera (a snapshot or a journal entry of a
/// format this build does not know) is refused, naming both formats; so is
/// one written in a format that no longer exists.
#[test]
fn a_state_of_an_unknown_format_is_refused_naming_both_formats() {
    let future = STATE_FORMAT + 1;
    for (table, what) in [("snapshot", "the snapshot"), ("journal", "journal entry")] {
        let dir = copy_of(&format!("format-{STATE_FORMAT}"));
        let db = dir.path().join("state.db");
        let conn = rusqlite::Connection::open(&db).unwrap();
        let changed = conn.execute(&format!("UPDATE {table} SET format = ?1 WHERE seq = (SELECT max(seq) FROM {table})"), [future]).unwrap();
        assert_eq!(changed, 1);
        drop(conn);
        let e = format!("{:#}", Actor::open(config(dir.path())).err().expect("refused"));
        assert!(e.contains(&format!("state format {future} (a newer Tessera than this one)")), "{e}");
        assert!(e.contains(&format!("this build writes state format {STATE_FORMAT}")), "{e}");
        assert!(e.contains(what) && e.contains(&db.display().to_string()), "names the row and the file: {e}");
        assert!(!dir.path().join("accounting.db").exists(), "refused before anything else is opened");
    }
}

/// The checked-in fixture of this build's state format N
/// (`tests/fixtures/state/format-N/`) is what today's code writes: the same
/// rows and the same listing. With `TESSERA_REGEN_STATE_FIXTURE=1`
/// (`scripts/regen-state-fixture`) it writes the directory instead, refusing
/// to rewrite one whose layout has since changed (bump the format first).
#[test]
fn the_current_formats_fixture_is_what_this_build_writes() {
    let dir = fixtures().join(format!("format-{STATE_FORMAT}"));
    let regen = std::env::var("TESSERA_REGEN_STATE_FIXTURE").is_ok_and(|v| v == "1");
    if regen {
        if dir.join("state.db").exists() {
            if let Err(e) = reads_back_as_written(&dir.join("state.db")) {
                panic!("{}: {e}\nThe layout changed since it was written: append an upgrade to UPGRADES in src/journal.rs (a new format) first; an older format's fixture is kept as it is.", dir.display());
            }
        }
        let jobs = write_fixture(&dir);
        std::fs::write(dir.join("jobs.json"), serde_json::to_string_pretty(&jobs).unwrap() + "\n").unwrap();
        eprintln!("wrote {}", dir.display());
        return;
    }
    let fresh = tempfile::tempdir().unwrap();
    let jobs = write_fixture(fresh.path());
    let text = |r: Vec<(Stored, i64, i64, String)>| r.into_iter().map(|(w, f, seq, t)| format!("{w:?} {f} {seq} {t}")).collect::<Vec<_>>();
    assert_eq!(
        text(rows(&dir.join("state.db"))),
        text(rows(&fresh.path().join("state.db"))),
        "the fixture {} is not what this build writes: if the scenario changed, run scripts/regen-state-fixture; if the layout changed, add a state format first",
        dir.display()
    );
    let listed: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(dir.join("jobs.json")).unwrap()).unwrap();
    assert_eq!(listed, serde_json::to_value(&jobs).unwrap(), "the fixture's listing is today's");
}

/// A fair-share state of format 5 (each association's Fair Tree figures)
/// comes back, upgraded, as one that decides as the engine that wrote it:
/// whether or not a calculation's tree was pending when it was written.
#[test]
fn a_format_5_fair_share_state_decides_as_it_did() {
    use tessera_core::share::{Accounts, PriorityConfig, PriorityKind, Weights};
    use tessera_core::{Effect, Input, JobId, JobSpec, Outcome};
    let acc = Accounts::from_groups([(1, 1), (2, 2), (2, 3)]);
    let cfg = PriorityConfig { kind: PriorityKind::Multifactor, weights: Weights { age: 0, fairshare: 10_000, jobsize: 0, partition: 0, qos: 0 }, ..PriorityConfig::default() };
    let job = |id: u64, user: i64| JobSpec { ticket: Some(acc.ticket(&format!("u{user}"), None, None, 0).unwrap()), ..JobSpec::new(JobId(id), 4, 1000) };
    for pending in [false, true] {
        let mut e = Engine::new(PolicyKind::Easy, 4).unwrap().with_sharing(acc.clone(), cfg, &Cluster::pool(4)).unwrap();
        let mut out = Vec::new();
        e.handle(0, tessera_core::Input::submit(job(1, 1)), &mut out);
        e.handle(0, Input::Pass, &mut out);
        e.handle(10, Input::submit(job(2, 1)), &mut out);
        e.handle(20, Input::submit(job(3, 2)), &mut out);
        e.handle(30, Input::submit(job(4, 3)), &mut out);
        if !pending {
            // a calculation whose tree is worked out (a job can start)
            e.handle(700, Input::Complete { job: JobId(1), outcome: Outcome::Exited(0) }, &mut out);
            e.handle(700, Input::Pass, &mut out);
        } else {
            // calculations made, their tree not worked out (nothing can start)
            e.handle(600, Input::Pass, &mut out);
        }
        // the state as format 5 wrote it: every association's figures
        let mut v = serde_json::to_value(e.snapshot()).unwrap();
        let share = v["share"].as_object_mut().expect("the engine's fair-share state");
        let tree = share.remove("tree").expect("its tree");
        let rows: Vec<serde_json::Value> = tree["fairshare"]
            .as_array()
            .unwrap()
            .iter()
            .map(|f| serde_json::json!({ "raw_usage": 0.0, "norm_shares": 0.0, "norm_usage": 0.0, "effective_usage": 0.0, "level_fs": "inf", "fairshare": f }))
            .collect();
        share.insert("rows".into(), rows.into());
        let text = serde_json::json!({ "engine": v, "ledger": {} }).to_string();
        let up = upgrade(Stored::Snapshot, 5, &text).unwrap();
        let mut restored = Engine::restore(serde_json::from_value(up["engine"].clone()).unwrap());
        assert_eq!(restored.shares().unwrap().rows, e.shares().unwrap().rows, "pending {pending}: the same Fair Tree");
        assert_eq!(restored.priority_factors(JobId(4)), e.priority_factors(JobId(4)), "pending {pending}");
        let (mut a, mut b) = (Vec::new(), Vec::new());
        for (eng, out) in [(&mut e, &mut a), (&mut restored, &mut b)] {
            for (at, j) in [(1000, 1), (2000, 3), (3000, 4)] {
                eng.handle(at, Input::Complete { job: JobId(j), outcome: Outcome::Exited(0) }, out);
                eng.handle(at, Input::Pass, out);
            }
        }
        assert_eq!(a, b, "pending {pending}: the upgraded state decides as the original");
        assert!(a.iter().any(|x| matches!(x, Effect::Start { .. })), "{a:?}");
    }
}
