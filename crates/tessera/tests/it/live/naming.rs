//! How users name jobs and read their limits: array tasks as `N_T` in every
//! command, the limit on a job's own nodes before it ends, and a request that
//! can never run refused by its options, with no job id spent.

use super::Live;
use tessera_proto::api::JobStateCode;

/// Two node types: the reference (factor 1) and one twice as fast (factor 2).
const TWO_PACES: &str = r#"
name = "two-paces"
[reference]
hs06_per_core = 10.0
[[nodetype]]
name = "ref"
nodes = "node[001-002]"
sockets = 1
cores_per_socket = 4
memory = "8G"
hs06_per_core = 10.0
[[nodetype]]
name = "fast"
nodes = "node[003-004]"
sockets = 1
cores_per_socket = 4
memory = "8G"
hs06_per_core = 20.0
[[partition]]
name = "ref"
nodetypes = ["ref"]
default = true
[[partition]]
name = "fast"
nodetypes = ["fast"]
"#;

fn out(o: &std::process::Output) -> String {
    format!("{}{}", String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr))
}

#[test]
fn a_running_jobs_limit_on_its_nodes_is_shown_before_it_ends() {
    let l = Live::start_on(1, 10, Some((TWO_PACES, 4)));
    let slow = l.submit(&["-p", "ref", "-t", "10", "--wrap", "sleep 30"]);
    let fast = l.submit(&["-p", "fast", "-t", "10", "--wrap", "sleep 30"]);
    l.wait_for("both running", 30, |l| [slow, fast].iter().all(|&j| l.job(j).is_some_and(|j| j.state == JobStateCode::Running)));
    assert_eq!(l.job(slow).unwrap().limit_on_nodes_s, Some(600));
    assert_eq!(l.job(fast).unwrap().limit_on_nodes_s, Some(300), "10 reference minutes are 5 on nodes twice as fast");
    let show = out(&l.cli(&["job", "show", &fast.to_string()]));
    assert!(show.contains("TimeLimit=10:00 LimitOnNodes=5:00"), "{show}");
    let q = out(&l.cli(&["queue", "--long"]));
    let line = q.lines().find(|x| x.trim_start().starts_with(&format!("{fast} "))).unwrap_or_else(|| panic!("{q}"));
    assert!(line.contains(" 10:00 ") && line.contains(" 5:00 "), "{q}");
    assert!(q.lines().next().unwrap().contains("LIMIT_ON_NODES"), "{q}");
    for j in [slow, fast] {
        assert!(l.cli(&["job", "cancel", &j.to_string()]).status.success());
    }
}

#[test]
fn array_tasks_are_named_n_t_in_show_cancel_script_and_queue() {
    let l = Live::start(1, 10);
    let first = l.submit(&["--array", "1-3", "--hold", "--wrap", "true"]);
    let task = format!("{first}_2");
    let show = out(&l.cli(&["job", "show", &task]));
    assert!(show.contains(&format!("JobId={task} ")), "{show}");
    let script = l.cli(&["job", "script", &task]);
    assert!(script.status.success() && out(&script).contains("true"), "{}", out(&script));
    let q = out(&l.cli(&["queue", "--jobs", &task]));
    assert_eq!(q.lines().count(), 2, "{q}");
    assert!(l.cli(&["job", "cancel", &task]).status.success());
    l.wait_for("the task's cancellation", 10, |l| l.jobs().iter().any(|j| j.display_id == task && j.state == JobStateCode::Cancelled));
    assert!(l.jobs().iter().filter(|j| j.display_id != task).all(|j| j.state == JobStateCode::Pending), "only that task is cancelled");
    let o = l.cli(&["job", "show", &format!("{first}_9")]);
    assert!(!o.status.success() && out(&o).contains(&format!("no array task {first}_9")), "{}", out(&o));
    let o = l.cli(&["job", "show", "7_x"]);
    assert!(!o.status.success() && out(&o).contains("expected a job id (12) or an array task (7_3)"), "{}", out(&o));
}

#[test]
fn a_request_that_can_never_run_names_its_options_and_spends_no_job_id() {
    let l = Live::start(1, 10);
    // each option fits a node, together no set of the 32 nodes holds them:
    // 256 tasks of 5 GiB on nodes of 8 cores and 32 GiB
    let o = l.cli(&["job", "submit", "-n", "256", "--mem-per-cpu", "5G", "--wrap", "true"]);
    assert!(!o.status.success());
    let e = out(&o);
    assert!(e.contains("--ntasks, --mem-per-cpu, --gpus-per-node") && e.contains("-n 256 --mem-per-cpu 5120M") && e.contains("partition batch"), "{e}");
    assert!(!e.contains("job 1"), "a refused request names no job: {e}");
    assert_eq!(l.submit(&["--hold", "--wrap", "true"]), 1, "the refusal spent no job id");
}

#[test]
fn afterok_on_an_array_waits_for_every_task_and_on_a_task_for_that_one() {
    let l = Live::start(1, 10);
    // task 0 ends at once, task 2 after 3 s
    let a = l.submit(&["--array", "0-2", "--wrap", "sleep $((SLURM_ARRAY_TASK_ID * 3 / 2))"]);
    let all = l.submit(&["--dependency", &format!("afterok:{a}"), "--wrap", "true"]);
    let one = l.submit(&["--dependency", &format!("afterok:{a}_1"), "--wrap", "true"]);
    l.wait_for("the dependents' ends", 60, |l| [all, one].iter().all(|&j| l.job(j).is_some_and(|j| j.state == JobStateCode::Completed)));
    let jobs = l.jobs();
    let end_of = |t: &str| jobs.iter().find(|j| j.display_id == t).and_then(|j| j.end).unwrap_or_else(|| panic!("task {t}"));
    let start_of = |id: u64| jobs.iter().find(|j| j.id == id).and_then(|j| j.start).unwrap();
    let last = end_of(&format!("{a}_2"));
    assert!(end_of(&format!("{a}_0")) < last, "the tasks end apart");
    assert!(start_of(all) >= last, "afterok:{a} started at {} before task {a}_2 ended at {last}", start_of(all));
    assert!(start_of(one) >= end_of(&format!("{a}_1")));
    let o = l.cli(&["job", "submit", "--dependency", &format!("afterok:{a}_7"), "--wrap", "true"]);
    assert!(!o.status.success() && out(&o).contains(&format!("task {a}_7 is not known")), "{}", out(&o));
}
