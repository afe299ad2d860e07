//! `tessera run`, Slurm's srun inside an allocation: a job step's client.
//!
//! It asks the controller for the step (`POST /v1/jobs/{id}/steps`), which
//! lays the tasks out on the job's nodes and has their agents start them;
//! each task connects its standard output and error back here (two TCP
//! connections that start with the step's key and the task's id), and each
//! line is printed as it comes (`--label`: `TASK: ` before it). It serves
//! the tasks PMI-1 (the simple PMI wire protocol of MPICH's Hydra, found by
//! `PMI_PORT`: init, maxes, key-value store, barrier, finalize), so an MPI
//! program's ranks find each other. Signals it gets are forwarded to the
//! tasks. It ends when the step does, with the worst of the tasks' exits.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};
use tessera_proto::api::{JobStateCode, SignalRequest, StepInfo, StepIo, StepRequest};
use tessera_proto::client::{Client, ClientError};

/// What `tessera run` was asked for.
#[derive(Debug, Clone)]
pub struct RunSpec {
    pub job: u64,
    pub ntasks: u32,
    pub nodes: Option<u32>,
    pub cpus_per_task: u32,
    pub ntasks_per_node: Option<u32>,
    pub label: bool,
    pub name: String,
    pub argv: Vec<String>,
}

/// This host's IPv4 addresses, loopback last: where the step's agents may
/// reach its client.
pub fn host_addrs() -> Vec<String> {
    let mut out = Vec::new();
    // SAFETY: getifaddrs fills a list freed below; each entry is read only.
    unsafe {
        let mut ifa: *mut libc::ifaddrs = std::ptr::null_mut();
        if libc::getifaddrs(&mut ifa) == 0 {
            let mut p = ifa;
            while !p.is_null() {
                let a = (*p).ifa_addr;
                if !a.is_null() && (*a).sa_family as i32 == libc::AF_INET {
                    let sin = &*(a as *const libc::sockaddr_in);
                    let ip = std::net::Ipv4Addr::from(u32::from_be(sin.sin_addr.s_addr));
                    if !ip.is_loopback() {
                        out.push(ip.to_string());
                    }
                }
                p = (*p).ifa_next;
            }
            libc::freeifaddrs(ifa);
        }
    }
    out.truncate(15);
    out.push("127.0.0.1".into());
    out
}

/// A random key for the step's connections (from the kernel's generator).
fn key() -> String {
    let mut b = [0u8; 16];
    if let Ok(mut f) = std::fs::File::open("/dev/urandom") {
        let _ = std::io::Read::read_exact(&mut f, &mut b);
    }
    b.iter().map(|x| format!("{x:02x}")).collect()
}

/// Run the step; the exit code `tessera run` ends with.
pub async fn run(client: &mut Client, spec: &RunSpec, workdir: String, env: BTreeMap<String, String>) -> Result<i32, String> {
    let io = TcpListener::bind("0.0.0.0:0").map_err(|e| format!("listening for the tasks' output: {e}"))?;
    let pmi = TcpListener::bind("0.0.0.0:0").map_err(|e| format!("listening for PMI: {e}"))?;
    let key = key();
    let req = StepRequest {
        ntasks: spec.ntasks,
        nodes: spec.nodes,
        cpus_per_task: spec.cpus_per_task,
        ntasks_per_node: spec.ntasks_per_node,
        name: spec.name.clone(),
        argv: spec.argv.clone(),
        env,
        workdir,
        io: StepIo { addrs: host_addrs(), port: io.local_addr().map_err(|e| e.to_string())?.port(), key: key.clone(), pmi_port: Some(pmi.local_addr().map_err(|e| e.to_string())?.port()) },
    };
    let out = Arc::new(Output { open: Mutex::new(0), closed: Condvar::new(), lock: Mutex::new(()) });
    {
        let (out, key, label) = (out.clone(), key.clone(), spec.label);
        std::thread::spawn(move || serve_output(io, key, label, out));
    }
    let job = spec.job;
    let info: StepInfo = client.call(hyper::Method::POST, &format!("/v1/jobs/{job}/steps"), Some(&req)).await.map_err(explain)?;
    let step = info.step;
    {
        let kvs = Arc::new(Kvs::new(info.ntasks, &info.tasks_per_node, &format!("tessera_{job}_{step}")));
        std::thread::spawn(move || serve_pmi(pmi, kvs));
    }
    use tokio::signal::unix::{signal, SignalKind};
    let kinds = [SignalKind::interrupt(), SignalKind::terminate(), SignalKind::hangup(), SignalKind::quit(), SignalKind::user_defined1(), SignalKind::user_defined2()];
    let mut sigs = Vec::new();
    for k in kinds {
        sigs.push((k.as_raw_value(), signal(k).map_err(|e| format!("catching signals: {e}"))?));
    }
    let info = loop {
        let caught = async {
            let futs: Vec<_> = sigs.iter_mut().map(|(n, s)| Box::pin(async move { s.recv().await.map(|_| *n) })).collect();
            futures_select(futs).await
        };
        tokio::select! {
            _ = tokio::time::sleep(Duration::from_millis(200)) => {
                let i: StepInfo = client.call::<(), _>(hyper::Method::GET, &format!("/v1/jobs/{job}/steps/{step}"), None).await.map_err(explain)?;
                if i.state != JobStateCode::Running {
                    break i;
                }
            }
            Some(n) = caught => {
                eprintln!("tessera run: forwarding signal {n} to step {job}.{step}");
                let _ = client.call::<_, StepInfo>(hyper::Method::POST, &format!("/v1/jobs/{job}/steps/{step}/signal"), Some(&SignalRequest { signal: n })).await;
            }
        }
    };
    // what the tasks wrote before they ended
    let deadline = Instant::now() + Duration::from_secs(5);
    let mut open = out.open.lock().expect("not poisoned");
    while *open > 0 && Instant::now() < deadline {
        open = out.closed.wait_timeout(open, Duration::from_millis(100)).expect("not poisoned").0;
    }
    drop(open);
    let code = match (info.state, info.exit_code, info.signal) {
        (JobStateCode::Completed, _, _) => 0,
        (_, _, Some(s)) => 128 + s,
        (_, Some(c), _) if c > 0 => c,
        _ => 1,
    };
    if info.state != JobStateCode::Completed {
        let why = if info.reason.is_empty() { String::new() } else { format!(": {}", info.reason) };
        eprintln!("tessera run: step {job}.{step} {}{why}", info.state.name());
    }
    Ok(code)
}

/// The first of several futures to finish.
async fn futures_select<F: std::future::Future<Output = Option<i32>> + Unpin>(futs: Vec<F>) -> Option<i32> {
    if futs.is_empty() {
        return std::future::pending().await;
    }
    let mut futs = futs;
    std::future::poll_fn(move |cx| {
        for f in futs.iter_mut() {
            if let std::task::Poll::Ready(v) = std::pin::Pin::new(f).poll(cx) {
                return std::task::Poll::Ready(v);
            }
        }
        std::task::Poll::Pending
    })
    .await
}

fn explain(e: ClientError) -> String {
    match e {
        ClientError::Api { body, .. } => body.error,
        e => e.to_string(),
    }
}

/// The tasks' connections still open, and one writer at a time.
struct Output {
    open: Mutex<usize>,
    closed: Condvar,
    lock: Mutex<()>,
}

fn serve_output(l: TcpListener, key: String, label: bool, out: Arc<Output>) {
    for c in l.incoming().flatten() {
        let (key, out) = (key.clone(), out.clone());
        *out.open.lock().expect("not poisoned") += 1;
        std::thread::spawn(move || {
            relay(c, &key, label, &out);
            *out.open.lock().expect("not poisoned") -= 1;
            out.closed.notify_all();
        });
    }
}

/// One task's stream: its header (`KEY TASK STREAM`), then its lines.
fn relay(c: TcpStream, key: &str, label: bool, out: &Output) {
    let mut r = BufReader::new(c);
    let mut head = String::new();
    if r.read_line(&mut head).is_err() {
        return; // an agent's reachability probe
    }
    let w: Vec<&str> = head.split_whitespace().collect();
    let (Some(&k), Some(task), Some(stream)) = (w.first(), w.get(1).and_then(|t| t.parse::<u32>().ok()), w.get(2)) else { return };
    if k != key {
        return;
    }
    let mut line = Vec::new();
    loop {
        line.clear();
        match r.read_until(b'\n', &mut line) {
            Ok(0) | Err(_) => return,
            Ok(_) => {
                let _g = out.lock.lock().expect("not poisoned");
                let prefix = if label { format!("{task}: ") } else { String::new() };
                let _ = if *stream == "2" {
                    let mut e = std::io::stderr().lock();
                    e.write_all(prefix.as_bytes()).and_then(|_| e.write_all(&line)).and_then(|_| e.flush())
                } else {
                    let mut o = std::io::stdout().lock();
                    o.write_all(prefix.as_bytes()).and_then(|_| o.write_all(&line)).and_then(|_| o.flush())
                };
            }
        }
    }
}

/// The step's PMI-1 key-value store and barrier.
struct Kvs {
    name: String,
    size: u32,
    mapping: String,
    state: Mutex<KvsState>,
    barrier: Condvar,
}

#[derive(Default)]
struct KvsState {
    values: BTreeMap<String, String>,
    arrived: u32,
    generation: u64,
}

impl Kvs {
    fn new(size: u32, tasks_per_node: &[u32], name: &str) -> Kvs {
        // PMI_process_mapping: (vector,(first node, nodes, tasks per node), ...)
        let mut blocks = Vec::new();
        let mut i = 0;
        while i < tasks_per_node.len() {
            let mut j = i;
            while j + 1 < tasks_per_node.len() && tasks_per_node[j + 1] == tasks_per_node[i] {
                j += 1;
            }
            blocks.push(format!("({i},{},{})", j - i + 1, tasks_per_node[i]));
            i = j + 1;
        }
        Kvs { name: name.to_string(), size, mapping: format!("(vector,{})", blocks.join(",")), state: Mutex::new(KvsState::default()), barrier: Condvar::new() }
    }
}

fn serve_pmi(l: TcpListener, kvs: Arc<Kvs>) {
    for c in l.incoming().flatten() {
        let kvs = kvs.clone();
        std::thread::spawn(move || {
            let _ = pmi_client(c, &kvs);
        });
    }
}

/// The `key=value` words of a PMI-1 message.
fn words(line: &str) -> BTreeMap<&str, &str> {
    line.split_whitespace().filter_map(|w| w.split_once('=')).collect()
}

/// One task's PMI-1 conversation (MPICH's simple PMI wire protocol, as the
/// Flux RFC 13 describes it).
fn pmi_client(c: TcpStream, kvs: &Kvs) -> std::io::Result<()> {
    let mut w = c.try_clone()?;
    let mut r = BufReader::new(c);
    let mut line = String::new();
    loop {
        line.clear();
        if r.read_line(&mut line)? == 0 {
            return Ok(());
        }
        let m = words(&line);
        let reply = match m.get("cmd").copied().or_else(|| m.get("mcmd").map(|_| "spawn")) {
            // PMI_PORT's handshake: the task names itself, the server says
            // who it is
            Some("initack") => {
                let id = m.get("pmiid").copied().unwrap_or("0");
                format!("cmd=initack\ncmd=set size={}\ncmd=set rank={id}\ncmd=set debug=0\n", kvs.size)
            }
            Some("init") => "cmd=response_to_init pmi_version=1 pmi_subversion=1 rc=0\n".to_string(),
            Some("get_maxes") => "cmd=maxes kvsname_max=256 keylen_max=256 vallen_max=1024 rc=0\n".to_string(),
            Some("get_appnum") => "cmd=appnum appnum=0 rc=0\n".to_string(),
            Some("get_universe_size") => format!("cmd=universe_size size={} rc=0\n", kvs.size),
            Some("get_my_kvsname") => format!("cmd=my_kvsname kvsname={} rc=0\n", kvs.name),
            Some("put") => {
                let (Some(k), v) = (m.get("key"), line.split_once("value=").map(|x| x.1.trim_end_matches(['\n', '\r']))) else { continue };
                kvs.state.lock().expect("not poisoned").values.insert(k.to_string(), v.unwrap_or("").to_string());
                "cmd=put_result rc=0\n".to_string()
            }
            Some("get") => {
                let k = m.get("key").copied().unwrap_or("");
                let v = if k == "PMI_process_mapping" { Some(kvs.mapping.clone()) } else { kvs.state.lock().expect("not poisoned").values.get(k).cloned() };
                match v {
                    Some(v) => format!("cmd=get_result rc=0 msg=success value={v}\n"),
                    None => "cmd=get_result rc=-1 msg=key_not_found\n".to_string(),
                }
            }
            Some("barrier_in") => {
                let mut s = kvs.state.lock().expect("not poisoned");
                let gen = s.generation;
                s.arrived += 1;
                if s.arrived == kvs.size {
                    s.arrived = 0;
                    s.generation += 1;
                    kvs.barrier.notify_all();
                } else {
                    while s.generation == gen {
                        s = kvs.barrier.wait(s).expect("not poisoned");
                    }
                }
                "cmd=barrier_out rc=0\n".to_string()
            }
            Some("finalize") => {
                w.write_all(b"cmd=finalize_ack rc=0\n")?;
                return Ok(());
            }
            Some("abort") => return Ok(()),
            Some("spawn") => {
                // the spawn request runs to `endcmd`; dynamic processes are
                // not offered
                while !line.trim_end().ends_with("endcmd") {
                    line.clear();
                    if r.read_line(&mut line)? == 0 {
                        return Ok(());
                    }
                }
                "cmd=spawn_result rc=-1\n".to_string()
            }
            Some(other) => format!("cmd={other} rc=-1 msg=unsupported\n"),
            None => continue,
        };
        w.write_all(reply.as_bytes())?;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_process_mapping_is_in_blocks_of_nodes() {
        assert_eq!(Kvs::new(4, &[2, 2], "k").mapping, "(vector,(0,2,2))");
        assert_eq!(Kvs::new(7, &[2, 2, 3], "k").mapping, "(vector,(0,2,2),(2,1,3))");
    }

    #[test]
    fn a_pmi_conversation_puts_gets_and_meets_at_the_barrier() {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = l.local_addr().unwrap();
        let kvs = Arc::new(Kvs::new(2, &[2], "kvs_1"));
        std::thread::spawn(move || serve_pmi(l, kvs));
        let talk = |rank: u32| {
            std::thread::spawn(move || {
                let c = TcpStream::connect(addr).unwrap();
                let mut w = c.try_clone().unwrap();
                let mut r = BufReader::new(c);
                let mut ask = |q: &str, lines: usize| {
                    w.write_all(q.as_bytes()).unwrap();
                    (0..lines)
                        .map(|_| {
                            let mut s = String::new();
                            r.read_line(&mut s).unwrap();
                            s
                        })
                        .collect::<String>()
                };
                assert!(ask(&format!("cmd=initack pmiid={rank}\n"), 4).contains(&format!("cmd=set rank={rank}")));
                assert!(ask("cmd=init pmi_version=1 pmi_subversion=1\n", 1).contains("rc=0"));
                assert!(ask("cmd=get_my_kvsname\n", 1).contains("kvsname=kvs_1"));
                assert!(ask(&format!("cmd=put kvsname=kvs_1 key=card{rank} value=addr of {rank}\n"), 1).contains("rc=0"));
                assert!(ask("cmd=barrier_in\n", 1).contains("barrier_out"));
                let other = 1 - rank;
                assert!(ask(&format!("cmd=get kvsname=kvs_1 key=card{other}\n"), 1).contains(&format!("value=addr of {other}")));
                assert!(ask("cmd=get kvsname=kvs_1 key=PMI_process_mapping\n", 1).contains("value=(vector,(0,1,2))"));
                assert!(ask("cmd=get kvsname=kvs_1 key=nothing\n", 1).contains("rc=-1"));
                assert!(ask("cmd=finalize\n", 1).contains("finalize_ack"));
            })
        };
        let (a, b) = (talk(0), talk(1));
        a.join().unwrap();
        b.join().unwrap();
    }
}

/// `tessera run`'s options (srun's names).
#[derive(clap::Args, Debug, Clone)]
pub struct RunArgs {
    /// Tasks to run.
    #[arg(short = 'n', long = "ntasks", default_value_t = 1)]
    pub ntasks: u32,
    /// Nodes to spread them over (default: one per task, at most the job's).
    #[arg(short = 'N', long = "nodes")]
    pub nodes: Option<u32>,
    /// Cores of each task.
    #[arg(short = 'c', long = "cpus-per-task", default_value_t = 1)]
    pub cpus_per_task: u32,
    /// At most this many tasks on a node.
    #[arg(long)]
    pub ntasks_per_node: Option<u32>,
    /// Each line of output begins with its task's id.
    #[arg(short = 'l', long)]
    pub label: bool,
    /// The step's name (default: the command's).
    #[arg(short = 'J', long = "job-name")]
    pub name: Option<String>,
    /// The job the step runs in (default: $TESSERA_JOB_ID, or $SLURM_JOB_ID;
    /// outside a job, an allocation made for it).
    #[arg(long)]
    pub jobid: Option<u64>,
    #[command(flatten)]
    pub alloc: AllocArgs,
    /// The command and its arguments.
    #[arg(trailing_var_arg = true, required = true, allow_hyphen_values = true)]
    pub command: Vec<String>,
}

/// What an allocation made by `tessera run` outside a job, or by `tessera
/// salloc`, asks for beyond its tasks (sbatch's names).
#[derive(clap::Args, Debug, Clone, Default)]
pub struct AllocArgs {
    /// Time limit (Slurm's syntax).
    #[arg(short = 't', long)]
    pub time: Option<String>,
    /// Partition (default: the cluster's default).
    #[arg(short = 'p', long)]
    pub partition: Option<String>,
    /// Memory per node (`--mem 4G`).
    #[arg(long)]
    pub mem: Option<String>,
    /// Memory per core (`--mem-per-cpu 2G`).
    #[arg(long)]
    pub mem_per_cpu: Option<String>,
    /// GPUs on each node.
    #[arg(long)]
    pub gpus_per_node: Option<String>,
}

/// `tessera salloc`'s options: an allocation, and a command run here in it.
#[derive(clap::Args, Debug, Clone)]
pub struct SallocArgs {
    /// Tasks the allocation holds.
    #[arg(short = 'n', long = "ntasks", default_value_t = 1)]
    pub ntasks: u32,
    /// Exactly this many nodes.
    #[arg(short = 'N', long = "nodes")]
    pub nodes: Option<u32>,
    /// Cores of each task.
    #[arg(short = 'c', long = "cpus-per-task", default_value_t = 1)]
    pub cpus_per_task: u32,
    /// The job's name.
    #[arg(short = 'J', long = "job-name", default_value = "interactive")]
    pub name: String,
    #[command(flatten)]
    pub alloc: AllocArgs,
    /// The command (default: $SHELL), run on this host with the job's
    /// variables; the allocation ends with it.
    #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
    pub command: Vec<String>,
}

impl RunArgs {
    /// What to run, in which job (None: outside any, an allocation is made).
    pub fn spec(&self, env: &BTreeMap<String, String>) -> Result<RunSpec, String> {
        let job = match self.jobid {
            Some(j) => j,
            None => match env.get("TESSERA_JOB_ID").or_else(|| env.get("SLURM_JOB_ID")) {
                Some(v) => v.parse().map_err(|_| format!("$TESSERA_JOB_ID {v:?}: expected a job id"))?,
                None => 0,
            },
        };
        let name = self.name.clone().unwrap_or_else(|| self.command[0].rsplit('/').next().unwrap_or("step").to_string());
        Ok(RunSpec { job, ntasks: self.ntasks, nodes: self.nodes, cpus_per_task: self.cpus_per_task, ntasks_per_node: self.ntasks_per_node, label: self.label, name, argv: self.command.clone() })
    }
}

/// Make an allocation without a batch script (`--no-shell`) for `ntasks`
/// tasks and wait until it runs; `who` names the command in its messages.
/// Interrupted while it waits, it cancels the allocation.
async fn allocate(client: &mut Client, who: &str, shape: (u32, Option<u32>, u32), name: &str, a: &AllocArgs, workdir: &str, env: &BTreeMap<String, String>) -> Result<tessera_proto::api::JobInfo, String> {
    use tessera_proto::api::{JobInfo, OptionArg, SubmitReply, SubmitRequest};
    let opt = |o: &str, v: String| OptionArg { option: o.into(), value: v };
    let mut options = vec![opt("--ntasks", shape.0.to_string()), opt("--cpus-per-task", shape.2.to_string()), opt("--no-shell", String::new()), opt("--job-name", name.to_string())];
    for (o, v) in [("--nodes", shape.1.map(|n| n.to_string())), ("--time", a.time.clone()), ("--partition", a.partition.clone()), ("--mem", a.mem.clone()), ("--mem-per-cpu", a.mem_per_cpu.clone()), ("--gpus-per-node", a.gpus_per_node.clone())] {
        if let Some(v) = v {
            options.push(opt(o, v));
        }
    }
    let req = SubmitRequest { script: format!("#!/bin/sh\n# an allocation of {who}, without a batch script\n"), options, workdir: workdir.to_string(), env: env.clone(), script_name: Some(name.to_string()), idempotency_key: None };
    let r: SubmitReply = client.call(hyper::Method::POST, "/v1/jobs", Some(&req)).await.map_err(explain)?;
    let id = *r.jobs.first().ok_or("the controller created no job")?;
    let mut told = false;
    let mut interrupt = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::interrupt()).map_err(|e| e.to_string())?;
    loop {
        let j: JobInfo = client.call::<(), _>(hyper::Method::GET, &format!("/v1/jobs/{id}"), None).await.map_err(explain)?;
        match j.state {
            JobStateCode::Running => {
                eprintln!("{who}: job {id} has been allocated resources ({})", j.nodelist);
                return Ok(j);
            }
            JobStateCode::Pending | JobStateCode::Suspended => {}
            s => return Err(format!("job {id} ended {} before it ran", s.name())),
        }
        if !told {
            eprintln!("{who}: job {id} queued and waiting for resources ({})", j.reason);
            told = true;
        }
        tokio::select! {
            _ = tokio::time::sleep(Duration::from_millis(200)) => {}
            _ = interrupt.recv() => {
                let _ = client.call::<(), JobInfo>(hyper::Method::POST, &format!("/v1/jobs/{id}/cancel"), None).await;
                return Err(format!("job {id} cancelled while it waited"));
            }
        }
    }
}

/// End an allocation made by [`allocate`] with its command's code.
async fn end(client: &mut Client, job: u64, code: i32) {
    let body = tessera_proto::api::EndRequest { code };
    if let Err(e) = client.call::<_, tessera_proto::api::JobInfo>(hyper::Method::POST, &format!("/v1/jobs/{job}/end"), Some(&body)).await {
        eprintln!("ending job {job}: {}", explain(e));
    }
}

/// This process's environment and working directory (what its tasks or
/// command get), and a runtime for its calls to the controller.
fn here() -> Result<(BTreeMap<String, String>, String, tokio::runtime::Runtime), String> {
    let env = std::env::vars().collect();
    let cwd = std::env::current_dir().map_err(|e| format!("the working directory: {e}"))?.display().to_string();
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().map_err(|e| e.to_string())?;
    Ok((env, cwd, rt))
}

/// `tessera run` from this process: its environment and working directory
/// go to the tasks; the code it ends with. Outside a job it makes an
/// allocation for the step, runs it, and ends the allocation with the
/// step's code (srun without an allocation).
pub fn run_here(mut client: Client, a: &RunArgs) -> Result<i32, String> {
    let (env, cwd, rt) = here()?;
    let mut spec = a.spec(&env)?;
    rt.block_on(async {
        if spec.job != 0 {
            return run(&mut client, &spec, cwd, env).await;
        }
        let j = allocate(&mut client, "tessera run", (spec.ntasks, spec.nodes, spec.cpus_per_task), &spec.name, &a.alloc, &cwd, &env).await?;
        spec.job = j.id;
        let code = run(&mut client, &spec, cwd, env).await;
        end(&mut client, j.id, *code.as_ref().unwrap_or(&1)).await;
        code
    })
}

/// `tessera salloc`: an allocation, then its command run here with the
/// job's variables (`tessera run` inside starts steps in it); the allocation
/// ends with the command, with its code.
pub fn salloc_here(mut client: Client, a: &SallocArgs) -> Result<i32, String> {
    let (env, cwd, rt) = here()?;
    let j = rt.block_on(allocate(&mut client, "salloc", (a.ntasks, a.nodes, a.cpus_per_task), &a.name, &a.alloc, &cwd, &env))?;
    eprintln!("salloc: Granted job allocation {}", j.id);
    let argv = if a.command.is_empty() { vec![env.get("SHELL").cloned().unwrap_or_else(|| "/bin/sh".into())] } else { a.command.clone() };
    let mut cmd = std::process::Command::new(&argv[0]);
    cmd.args(&argv[1..]);
    for prefix in ["SLURM_", "TESSERA_"] {
        for (k, v) in [("JOB_ID", j.id.to_string()), ("JOB_NODELIST", j.nodelist.clone()), ("NODELIST", j.nodelist.clone()), ("JOB_NUM_NODES", j.nodes.to_string()), ("NNODES", j.nodes.to_string()), ("NTASKS", a.ntasks.to_string()), ("NPROCS", a.ntasks.to_string()), ("CPUS_PER_TASK", a.cpus_per_task.to_string()), ("JOB_NAME", a.name.clone())] {
            cmd.env(format!("{prefix}{k}"), v);
        }
    }
    cmd.env("SLURM_JOBID", j.id.to_string());
    let code = match cmd.status() {
        Ok(s) => s.code().unwrap_or_else(|| 128 + std::os::unix::process::ExitStatusExt::signal(&s).unwrap_or(0)),
        Err(e) => {
            eprintln!("salloc: cannot run {:?}: {e}", argv[0]);
            127
        }
    };
    rt.block_on(end(&mut client, j.id, code));
    eprintln!("salloc: Relinquishing job allocation {}", j.id);
    Ok(code)
}
