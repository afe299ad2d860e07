//! Who may read and run what: the state directories are the operator's, one
//! controller (and one agent) holds a state directory, a job reaches files as
//! its submitter only, and a user sees only their own jobs' scripts and
//! environments. These run as root (CI does), with `nobody` as the other user.

use super::{Live, BIN};
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Command, Output};
use std::time::{Duration, Instant};
use tessera_proto::api::JobStateCode;

const NOBODY: u32 = 65534;

fn root() -> bool {
    if !nix::unistd::geteuid().is_root() {
        eprintln!("SKIPPED: needs root (to run clients and jobs as another user)");
        return false;
    }
    true
}

fn text(o: &Output) -> String {
    format!("{}{}", String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr))
}

fn mode(p: &Path) -> u32 {
    std::fs::symlink_metadata(p).unwrap().permissions().mode() & 0o7777
}

/// Every file directly in `dir` is 0600 but those named in `public` (0644),
/// and `dir` itself is 0711; the files found.
fn assert_private(dir: &Path, public: &[&str]) -> Vec<String> {
    assert_eq!(mode(dir), 0o711, "{}", dir.display());
    let mut seen = Vec::new();
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        let name = e.file_name().to_string_lossy().to_string();
        if !e.file_type().unwrap().is_file() {
            continue;
        }
        let want = if public.contains(&name.as_str()) { 0o644 } else { 0o600 };
        assert_eq!(mode(&e.path()), want, "{} is {:o}", e.path().display(), mode(&e.path()));
        seen.push(name);
    }
    seen
}

/// `cat FILE` as nobody: refused.
fn nobody_cannot_read(p: &Path) {
    let o = Command::new("cat").arg(p).uid(NOBODY).gid(NOBODY).output().unwrap();
    assert!(!o.status.success() && text(&o).contains("Permission denied"), "nobody read {}: {}", p.display(), text(&o));
}

#[test]
fn the_controllers_and_agents_state_is_the_operators_only() {
    if !root() {
        return;
    }
    let l = Live::start(1, 10);
    std::fs::set_permissions(l.dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    // a job whose environment holds a secret, held so it stays in the journal
    let o = Command::new(BIN).args(["job", "submit", "--hold", "--parsable", "--wrap", "true"]).env("TESSERA_STATE_DIR", l.state()).env("API_TOKEN", "s3cret-token").output().unwrap();
    assert!(o.status.success(), "{}", text(&o));
    let job = l.submit(&["--wrap", "echo ran"]);
    l.wait_for("the job's end", 30, |l| l.job(job).is_some_and(|j| j.state == JobStateCode::Completed));
    let files = assert_private(&l.state(), tessera_controller::PUBLIC_FILES);
    for f in ["state.db", "cluster.key", "controller.lock", "accounting.db"] {
        assert!(files.iter().any(|x| x == f), "{f} in {files:?}");
    }
    for f in &files {
        if !tessera_controller::PUBLIC_FILES.contains(&f.as_str()) {
            nobody_cannot_read(&l.state().join(f));
        }
    }
    // the accounting store is every user's to read (Slurm with PrivateData
    // unset), and holds no environment
    let o = Command::new(BIN).args(["acct", "-P", "-o", "JobID,State"]).env("TESSERA_STATE_DIR", l.state()).current_dir("/").uid(NOBODY).gid(NOBODY).output().unwrap();
    assert!(o.status.success() && text(&o).contains(&format!("{job}|COMPLETED")), "{}", text(&o));
    let store = std::fs::read(l.state().join("accounting.db")).unwrap();
    assert!(!store.windows(12).any(|w| w == b"s3cret-token"), "the accounting store holds an environment");
    // the agent's spool: passable (a job's user runs the script it owns
    // there), its records the operator's
    let agent = l.agent_state(0);
    assert_private(&agent, &[]);
    let jobs = agent.join("jobs");
    assert_eq!(mode(&jobs), 0o711);
    let mut records = 0;
    for e in std::fs::read_dir(&jobs).unwrap().flatten() {
        if !e.file_name().to_string_lossy().ends_with(".sh") {
            assert_eq!(mode(&e.path()), 0o600, "{}", e.path().display());
            nobody_cannot_read(&e.path());
            records += 1;
        }
    }
    assert!(records > 0);
    let o = Command::new("ls").arg(&l.state()).uid(NOBODY).gid(NOBODY).output().unwrap();
    assert!(!o.status.success(), "nobody listed the state directory: {}", text(&o));
    // a user still finds the controller, and sees the queue
    let o = Command::new(BIN).args(["queue"]).env("TESSERA_STATE_DIR", l.state()).current_dir("/").uid(NOBODY).gid(NOBODY).output().unwrap();
    assert!(o.status.success(), "{}", text(&o));
}

#[test]
fn a_second_controller_or_agent_on_a_state_directory_is_refused_with_the_holders_pid() {
    let mut l = Live::start(1, 10);
    let first = l.controller_pid();
    let before = std::fs::read_to_string(l.state().join("controller.json")).unwrap();
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let o = Command::new(BIN).args(["controller", "--state-dir", l.state().to_str().unwrap(), "--listen", &format!("127.0.0.1:{port}")]).output().unwrap();
    assert!(!o.status.success());
    assert!(text(&o).contains(&format!("pid {first}")), "{}", text(&o));
    assert_eq!(std::fs::read_to_string(l.state().join("controller.json")).unwrap(), before, "the refused controller changed controller.json");
    // `tessera up` on it too, and a second agent on the first one's spool
    let o = Command::new(BIN).args(["up", "--detach", "--state-dir", l.state().to_str().unwrap()]).output().unwrap();
    assert!(!o.status.success() && text(&o).contains(&format!("pid {first}")), "{}", text(&o));
    let o = Command::new(BIN)
        .args(["agent", "--name", "agent1", "--controller", &format!("http://127.0.0.1:{}", l.port), "--key-file", l.state().join("cluster.key").to_str().unwrap()])
        .args(["--nodes", &l.agent_nodes(0), "--default-cluster", "--state-dir", l.agent_state(0).to_str().unwrap()])
        .output()
        .unwrap();
    let agent = l.agent_pid(0);
    assert!(!o.status.success() && text(&o).contains(&format!("pid {agent}")), "{}", text(&o));
    // the first still serves, and runs a job
    let job = l.submit(&["--wrap", "true"]);
    l.wait_for("the job's end", 30, |l| l.job(job).is_some_and(|j| j.state == JobStateCode::Completed));
    // killed with -9, it leaves no stale lock: the next controller starts
    l.kill9_controller();
    l.start_controller();
    let job = l.submit(&["--wrap", "true"]);
    l.wait_for("the job's end after the restart", 30, |l| l.job(job).is_some_and(|j| j.state == JobStateCode::Completed));
}

#[test]
fn tessera_up_makes_its_state_the_operators_and_refuses_a_second_up() {
    if !root() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("st");
    let run = |args: &[&str]| Command::new(BIN).args(args).arg("--state-dir").arg(&state).current_dir(dir.path()).env_remove("TESSERA_STATE_DIR").output().unwrap();
    let up = run(&["up", "--detach", "--agents", "2"]);
    assert!(up.status.success(), "{}", text(&up));
    // stopped however the test ends
    let _down = super::Down(&state);
    let pid: u32 = std::fs::read_to_string(state.join("controller.lock")).unwrap().trim().parse().unwrap();
    let again = run(&["up", "--detach"]);
    assert!(!again.status.success() && text(&again).contains(&format!("pid {pid}")), "{}", text(&again));
    let files = assert_private(&state, tessera_controller::PUBLIC_FILES);
    assert!(files.iter().any(|f| f == "controller.log") && files.iter().any(|f| f == "state.db"), "{files:?}");
    assert_eq!(mode(&state.join("agents")), 0o711);
    for a in ["agent1", "agent2"] {
        assert_private(&state.join("agents").join(a), &[]);
    }
}

#[test]
fn a_user_sees_their_own_jobs_scripts_and_environments_and_nobody_elses() {
    if !root() {
        return;
    }
    let l = Live::start(1, 10);
    std::fs::set_permissions(l.dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let as_user = |uid: u32, args: &[&str]| Command::new(BIN).args(args).current_dir("/").env("TESSERA_STATE_DIR", l.state()).env("API_TOKEN", format!("token-of-{uid}")).uid(uid).gid(uid).output().unwrap();
    let roots = as_user(0, &["job", "submit", "--hold", "--parsable", "--wrap", "echo root-script"]);
    let roots = text(&roots).trim().to_string();
    let theirs = as_user(NOBODY, &["job", "submit", "--hold", "--parsable", "-D", "/tmp", "--wrap", "echo nobody-script"]);
    let theirs = text(&theirs).trim().to_string();
    // the owner sees both
    let o = as_user(NOBODY, &["job", "script", &theirs]);
    assert!(o.status.success() && text(&o).contains("nobody-script"), "{}", text(&o));
    let o = as_user(NOBODY, &["job", "script", "--env", &theirs]);
    assert!(text(&o).contains(&format!("API_TOKEN=token-of-{NOBODY}")), "{}", text(&o));
    // another user neither
    for args in [vec!["job", "script", roots.as_str()], vec!["job", "script", "--env", roots.as_str()]] {
        let o = as_user(NOBODY, &args);
        assert!(!o.status.success() && text(&o).contains("403"), "{}", text(&o));
        assert!(!text(&o).contains("root-script") && !text(&o).contains("token-of-0"), "{}", text(&o));
    }
    // an operator both
    let o = as_user(0, &["job", "script", "--env", &theirs]);
    assert!(text(&o).contains(&format!("API_TOKEN=token-of-{NOBODY}")), "{}", text(&o));
}

#[test]
fn a_job_that_cannot_open_its_output_fails_with_that_reason_and_touches_nothing() {
    if !root() {
        return;
    }
    let l = Live::start(1, 10);
    std::fs::set_permissions(l.dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let secret = l.dir.path().join("secret");
    std::fs::write(&secret, "root only\n").unwrap();
    std::fs::set_permissions(&secret, std::fs::Permissions::from_mode(0o600)).unwrap();
    let submit = |uid: u32, out: &str| {
        let o = Command::new(BIN).args(["job", "submit", "--parsable", "-D", "/tmp", "-o", out, "--wrap", "echo owned"]).current_dir("/").env("TESSERA_STATE_DIR", l.state()).uid(uid).gid(uid).output().unwrap();
        assert!(o.status.success(), "{}", text(&o));
        text(&o).trim().parse::<u64>().unwrap()
    };
    let show = |id: u64| {
        let t0 = Instant::now();
        loop {
            if l.job(id).is_some_and(|j| j.state == JobStateCode::Failed) {
                return text(&l.cli(&["job", "show", &id.to_string()]));
            }
            assert!(t0.elapsed() < Duration::from_secs(30), "job {id} did not fail:\n{}", l.logs());
            std::thread::sleep(Duration::from_millis(100));
        }
    };
    let mine = submit(NOBODY, secret.to_str().unwrap());
    let s = show(mine);
    let why = format!("cannot open the output file `{}`: Permission denied", secret.display());
    assert!(s.contains("Reason=LaunchFailed") && s.contains(&why), "{s}");
    // and in the accounting record
    let rows = text(&l.cli(&["acct", "-P", "-o", "JobID,State,Reason"]));
    assert!(rows.lines().any(|r| r.starts_with(&format!("{mine}|FAILED|launch failed: ")) && r.contains(&why)), "{rows}");
    assert_eq!(std::fs::read_to_string(&secret).unwrap(), "root only\n");
    assert_eq!(std::fs::metadata(&secret).unwrap().uid(), 0);
    let missing = submit(0, "/nonexistent-dir/out");
    let s = show(missing);
    assert!(s.contains("cannot open the output file `/nonexistent-dir/out`: No such file or directory"), "{s}");
}

#[test]
fn tessera_up_with_a_changed_cluster_file_says_it_keeps_the_state_s_cluster() {
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("st");
    let run = |args: &[&str]| Command::new(BIN).args(args).arg("--state-dir").arg(&state).current_dir(dir.path()).env_remove("TESSERA_STATE_DIR").output().unwrap();
    let up = run(&["up", "--detach"]);
    assert!(up.status.success(), "{}", text(&up));
    assert!(run(&["down"]).status.success());
    // the file given now: four of the nodes, with more cores, and a new one
    let other = dir.path().join("other.toml");
    std::fs::write(&other, "name = \"other\"\n[[nodetype]]\nname = \"big\"\nnodes = \"node[001-004]\"\nsockets = 2\ncores_per_socket = 8\nmemory = \"64G\"\n[[nodetype]]\nname = \"new\"\nnodes = \"extra01\"\nsockets = 1\ncores_per_socket = 4\nmemory = \"8G\"\n[[partition]]\nname = \"batch\"\nnodetypes = [\"big\", \"new\"]\ndefault = true\n").unwrap();
    let up = run(&["up", "--detach", "--cluster", other.to_str().unwrap()]);
    let _down = super::Down(&state);
    assert!(up.status.success(), "{}", text(&up));
    let err = String::from_utf8_lossy(&up.stderr).to_string();
    assert!(err.contains("warning:") && err.contains("keeps it") && err.contains("added: extra01") && err.contains("removed: node[005-032]") && err.contains("changed: node[001-004]"), "{err}");
    assert!(String::from_utf8_lossy(&up.stdout).contains("256 cores"), "the state's 32 nodes of 8 cores are up: {}", text(&up));
}
