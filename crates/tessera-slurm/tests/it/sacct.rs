//! sacct histories: every job once, every step folded into its job, arrays,
//! heterogeneous and requeued jobs as sacct shows them; bad lines named.

use tessera_slurm::sacct::{read, Ended, History, Limit};
use tessera_slurm::{conf, history, site};

fn example(name: &str) -> String {
    format!("{}/../../examples/slurm/{name}", env!("CARGO_MANIFEST_DIR"))
}

fn cluster() -> tessera_core::cluster::Cluster {
    let load = |p: &str| std::fs::read_to_string(p).map_err(|e| e.to_string());
    let lines = conf::read(&example("slurm.conf"), &load).unwrap();
    site::import(&lines, None, "site.toml").unwrap().cluster
}

fn dump() -> History {
    read(&std::fs::read_to_string(example("sacct.txt")).unwrap(), "sacct.txt").unwrap()
}

#[test]
fn every_job_once_and_every_step_folded_into_its_job() {
    let h = dump();
    let ids: Vec<i64> = h.jobs.iter().map(|j| j.id).collect();
    // 16 rows: 7 finished jobs, 6 steps, one earlier run of a requeued job,
    // a pending array remainder and a running job (with its step) left out
    assert_eq!(ids, vec![1001, 1002, 1003, 1010, 1011, 1020, 1030]);
    assert_eq!((h.rows, h.steps, h.requeued_runs, h.unfinished), (16, 6, 1, 2));
    let j = &h.jobs[0];
    let steps: Vec<&str> = j.steps.iter().map(|s| s.step.as_str()).collect();
    assert_eq!(steps, vec!["batch", "extern", "0"]);
    assert_eq!(j.steps[2].ntasks, 56);
    assert_eq!(j.steps[0].cpu_s, Some(10.5), "TotalCPU as MM:SS.mmm");
    assert_eq!((j.alloc_cpus, j.alloc_nodes, j.alloc_mem_mb, j.nodes.len()), (56, 2, 112_000, 2));
    assert_eq!(j.cpu_s, Some(2.0 * 86_400.0 + 4.0 * 3600.0), "TotalCPU as D-HH:MM:SS");
    assert_eq!(j.end - j.start.unwrap(), 3600);
    assert_eq!(j.limit, Limit::Seconds(7200));
}

#[test]
fn arrays_heterogeneous_and_requeued_jobs_are_read_as_sacct_shows_them() {
    let h = dump();
    let job = |id: i64| h.jobs.iter().find(|j| j.id == id).unwrap();
    // array tasks: their own ids, the array's id and the task's index
    assert_eq!((job(1003).array, job(1003).shown.as_str()), (Some((1002, 1)), "1002_1"));
    assert_eq!((job(1002).array, job(1002).ended, job(1002).exit_code), (Some((1002, 2)), Ended::Failed, 3));
    // a heterogeneous job's components: jobs of their own
    assert_eq!((job(1010).het, job(1010).alloc_gpus, job(1010).partition.as_str()), (Some((1010, 0)), 2, "gpu"));
    assert_eq!((job(1011).het, job(1011).alloc_gpus), (Some((1010, 1)), 0));
    // requeued: submitted when first submitted, run as last run, one requeue
    let r = job(1020);
    assert_eq!((r.requeues, r.ended, r.signal, r.nodes.clone()), (1, Ended::Timeout, 15, vec!["bdw005".to_string()]));
    assert_eq!(r.start.unwrap() - r.submit, 3600 + 180, "waited from its first submission");
    // cancelled while pending: never started
    assert_eq!((job(1030).start, job(1030).ended, job(1030).nodes.len()), (None, Ended::Cancelled, 0));
}

#[test]
fn the_history_becomes_a_workload_and_accounting_records_on_the_cluster() {
    let (h, c) = (dump(), cluster());
    let (header, swf) = history::swf(&h, &c, "sacct.txt");
    assert!(header.contains(&"Note: user 1 = alice".to_string()) && header.contains(&"Note: queue 2 = gpu".to_string()), "{header:?}");
    let r = swf.iter().find(|r| r.job_number == 1010).unwrap();
    // 09:00:00 after the first submission at 08:00:00; queue 2 is `gpu`
    assert_eq!((r.submit_time, r.wait_time, r.run_time, r.allocated_procs, r.requested_time, r.status, r.queue), (3600, 10, 1800, 8, 4 * 3600, 1, 2));
    assert_eq!(r.requested_memory, 32 * 1024 * 1024 / 8, "KB per processor");
    let never = swf.iter().find(|r| r.job_number == 1030).unwrap();
    assert_eq!((never.wait_time, never.run_time, never.status), (-1, -1, 5));
    let (epoch, recs) = history::records(&h, &c, "sacct.txt").unwrap();
    assert_eq!(epoch, h.jobs[0].submit);
    let j = recs.iter().find(|r| r.job_id == 1001).unwrap();
    let alloc: Vec<(String, u32, u64)> = j.allocations.iter().map(|a| (c.nodes[a.node as usize].name.clone(), a.cores, a.memory_mb)).collect();
    assert_eq!(alloc, vec![("bdw001".into(), 28, 56_000), ("bdw002".into(), 28, 56_000)], "spread evenly over its nodes");
    assert_eq!(j.steps.len(), 3);
    let g = recs.iter().find(|r| r.job_id == 1010).unwrap();
    assert_eq!(g.allocations[0].gpus, 2);
    // on a cluster without the job's nodes: an error naming the line
    let other = tessera_core::cluster::Cluster::from_toml("[[nodetype]]\nname = \"x\"\ncount = 2\ncores = 8\n", "x.toml").unwrap();
    let e = history::records(&h, &other, "sacct.txt").unwrap_err().to_string();
    assert!(e.starts_with("sacct.txt:2: `NodeList`: node `bdw001` is not in the cluster file"), "{e}");
}

#[test]
fn bad_lines_name_their_line_and_field() {
    let text = std::fs::read_to_string(example("sacct.txt")).unwrap();
    let header = text.lines().next().unwrap();
    let row = text.lines().nth(1).unwrap();
    for (bad, want) in [
        (row.replacen("2023-03-01T08:00:05", "yesterday", 1), "s.txt:2: `Start`: expected a time such as 2022-06-01T10:00:05, Unknown or None, found `yesterday`"),
        (row.replace("COMPLETED", "EXPLODED"), "s.txt:2: `State`: expected a Slurm job state"),
        (row.replace("|0:0|", "|zero|"), "s.txt:2: `ExitCode`: expected code:signal such as 0:0, found `zero`"),
        (row.replace("|02:00:00|", "|two hours|"), "s.txt:2: `Timelimit`: expected a limit such as 01:00:00"),
        (row.replace("|112000M|", "|lots|"), "s.txt:2: `ReqMem`: expected a size such as 4000M"),
        (format!("{row}|extra"), "s.txt:2: expected 27 fields separated by `|`, as the header has, found 28"),
        (row.replace("|bdw[001-002]|", "|bdw[001-|"), "s.txt:2: `NodeList`: invalid hostlist"),
    ] {
        let e = read(&format!("{header}\n{bad}\n"), "s.txt").unwrap_err().to_string();
        assert!(e.starts_with(want), "got  {e}\nwant {want}");
    }
    let e = read(&format!("{}\n{row}\n", header.replace("State|", "")), "s.txt").unwrap_err().to_string();
    assert!(e.starts_with("s.txt:1: `State`: missing from the header"), "{e}");
    let step = text.lines().nth(2).unwrap();
    let e = read(&format!("{header}\n{step}\n"), "s.txt").unwrap_err().to_string();
    assert!(e.starts_with("s.txt:2: `JobIDRaw`: step 1001.batch does not follow a row of job 1001"), "{e}");
    // a history before Slurm 21.08: ReqMem per CPU (c) or per node (n)
    let h = read(&format!("{header}\n{}\n", row.replace("|112000M|", "|2000Mc|")), "s.txt").unwrap();
    assert_eq!(h.jobs[0].req_mem_mb, 2000 * 56);
}

#[test]
fn a_dump_listing_more_nodes_than_its_bound_is_refused_where_it_passes_it() {
    let text = std::fs::read_to_string(example("sacct.txt")).unwrap();
    let header = text.lines().next().unwrap();
    let row = text.lines().nth(1).unwrap();
    assert!(row.contains("|bdw[001-002]|"), "{row}");
    let id = row.split('|').next().unwrap();
    let other = row.replacen(&format!("{id}|{id}|"), "999999|999999|", 1);
    let two = format!("{header}\n{row}\n{other}\n");
    assert_eq!(tessera_slurm::sacct::read_at_most(&two, "s.txt", 4).unwrap().jobs.len(), 2);
    let e = tessera_slurm::sacct::read_at_most(&two, "s.txt", 3).unwrap_err().to_string();
    assert!(e.starts_with("s.txt:3: `NodeList`: invalid hostlist `bdw[001-002]`") && e.ends_with("the jobs before it list 2 nodes, and a dump at most 3 in all (split it with sacct -S and -E)"), "{e}");
}

/// A real dump: `examples/slurm/sacct-real.txt` is what `sacct -P -a -D`
/// printed after Debian's Slurm 22.05.8 (scripts/slurm-emulate --accounting,
/// slurmdbd on MariaDB, its slurm.conf `examples/slurm/emulated.conf`) ran an
/// array of three with srun steps, a two-node job with two steps, a failing
/// job, a whole-cluster job, one cancelled while pending, a heterogeneous
/// job, one requeued by `scontrol requeue` and one killed at its limit.
/// Every job is imported once, every step folded into its job.
#[test]
fn a_real_slurm_dump_imports_without_loss() {
    let text = std::fs::read_to_string(example("sacct-real.txt")).unwrap();
    let h = read(&text, "sacct-real.txt").unwrap();
    let rows = text.lines().count() as u64 - 1;
    // every row is a job, a step (the requeued run's own batch step
    // included), or an earlier run of a requeued job
    assert_eq!((h.rows, h.jobs.len() as u64 + h.steps + h.requeued_runs + h.unfinished), (rows, rows));
    assert_eq!((h.jobs.len(), h.steps, h.requeued_runs, h.unfinished), (11, 17, 1, 0));
    let mut shown: Vec<&str> = h.jobs.iter().map(|j| j.shown.as_str()).collect();
    shown.sort_unstable();
    assert_eq!(shown, vec!["11", "1_1", "1_2", "1_3", "2", "3", "4", "5", "6+0", "6+1", "8"], "every job once");
    let job = |s: &str| h.jobs.iter().find(|j| j.shown == s).unwrap();
    let steps = |s: &str| job(s).steps.iter().map(|x| x.step.clone()).collect::<Vec<_>>();
    assert_eq!(steps("2"), vec!["batch", "0", "1"]);
    assert_eq!((job("2").alloc_nodes, job("2").nodes.len(), job("2").alloc_cpus), (2, 2, 4));
    assert_eq!(steps("1_3"), vec!["batch", "0"]);
    assert_eq!(job("1_3").array, Some((1, 3)));
    assert_eq!((job("6+1").het, steps("6+1")), (Some((6, 1)), vec!["0".to_string()]));
    assert_eq!((job("3").ended, job("3").exit_code), (Ended::Failed, 3));
    assert_eq!((job("11").ended, job("11").limit), (Ended::Timeout, Limit::Seconds(60)));
    assert_eq!((job("5").start, job("5").ended), (None, Ended::Cancelled));
    assert_eq!((job("8").requeues, job("8").ended, steps("8")), (1, Ended::Completed, vec!["batch".to_string()]));
    let steps_total: usize = h.jobs.iter().map(|j| j.steps.len()).sum();
    assert_eq!(steps_total as u64 + 1, h.steps, "the requeued run's own batch step goes with it");
    // onto the cluster of its slurm.conf: accounting records for every job
    let load = |p: &str| std::fs::read_to_string(p).map_err(|e| e.to_string());
    let c = site::import(&conf::read(&example("emulated.conf"), &load).unwrap(), None, "emulated.toml").unwrap().cluster;
    let (_, recs) = history::records(&h, &c, "sacct-real.txt").unwrap();
    assert_eq!(recs.len(), 11);
}
