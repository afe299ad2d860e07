//! The HTTP/JSON API (routes in [`ROUTES`], described by `openapi.json`), on a
//! TCP address for remote users and agents (signed tokens) and on the state
//! directory's Unix socket for local users (the kernel's peer credentials).
//! Handlers authenticate, decode, and pass a message to the actor; they never
//! touch the state.

use tessera_proto::unix_now;
use crate::actor::{Actor, JobOp, Msg};
use crate::auth::{local_user, Identity, Key, Role};
use crate::{ApiError, Config, Endpoint};
use anyhow::{Context, Result};
use axum::extract::connect_info::{ConnectInfo, Connected};
use axum::extract::rejection::JsonRejection;
use axum::extract::{FromRequestParts, Path, State};
use axum::http::request::Parts;
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::serve::IncomingStream;
use axum::{Json, Router};
use std::sync::mpsc::Sender;
use std::sync::Arc;
use tessera_core::NodeChange;
use tessera_proto::api::*;
use tokio::net::{TcpListener, UnixListener};
use tokio::sync::oneshot;

/// Every route: (method, path). The OpenAPI document lists exactly these (a
/// test checks both ways, and that each answers).
pub const ROUTES: &[(&str, &str)] = &[
    ("POST", "/v1/jobs"),
    ("GET", "/v1/jobs"),
    ("GET", "/v1/jobs/{id}"),
    ("GET", "/v1/jobs/{id}/script"),
    ("POST", "/v1/jobs/{id}/{action}"),
    ("POST", "/v1/jobs/{id}/end"),
    ("POST", "/v1/jobs/{id}/steps"),
    ("GET", "/v1/jobs/{id}/steps/{step}"),
    ("POST", "/v1/jobs/{id}/steps/{step}/signal"),
    ("GET", "/v1/nodes"),
    ("GET", "/v1/cluster"),
    ("POST", "/v1/cluster"),
    ("POST", "/v1/cluster/budget"),
    ("GET", "/v1/accounts"),
    ("POST", "/v1/accounts"),
    ("GET", "/v1/shares"),
    ("GET", "/v1/priorities"),
    ("GET", "/v1/reservations"),
    ("POST", "/v1/reservations"),
    ("DELETE", "/v1/reservations/{name}"),
    ("POST", "/v1/nodes/{name}/{action}"),
    ("POST", "/v1/agent/register"),
    ("POST", "/v1/agent/poll"),
    ("POST", "/v1/agent/report"),
    ("GET", "/v1/openapi.json"),
    ("GET", "/metrics"),
    ("GET", "/"),
];

/// Routes that answer without credentials: the dashboard (aggregates only).
pub const PUBLIC_ROUTES: &[(&str, &str)] = &[("GET", "/")];

/// How the connection reached us: over the Unix socket, the peer's uid.
#[derive(Clone, Debug)]
pub struct Peer {
    pub uid: Option<u32>,
}

/// The TCP listener: every accepted connection without Nagle's algorithm, so a
/// small reply (an agent's poll, a submission's acknowledgement) leaves at once
/// instead of waiting for the peer's delayed ACK (tens of milliseconds on
/// every command to an agent otherwise).
pub struct Tcp(pub TcpListener);

impl axum::serve::Listener for Tcp {
    type Io = tokio::net::TcpStream;
    type Addr = std::net::SocketAddr;

    async fn accept(&mut self) -> (Self::Io, Self::Addr) {
        let (s, a) = axum::serve::Listener::accept(&mut self.0).await;
        if let Err(e) = s.set_nodelay(true) {
            tracing::warn!("TCP_NODELAY on an accepted connection: {e}");
        }
        (s, a)
    }

    fn local_addr(&self) -> std::io::Result<Self::Addr> {
        self.0.local_addr()
    }
}

impl Connected<IncomingStream<'_, Tcp>> for Peer {
    fn connect_info(_: IncomingStream<'_, Tcp>) -> Self {
        Peer { uid: None }
    }
}

impl Connected<IncomingStream<'_, UnixListener>> for Peer {
    fn connect_info(s: IncomingStream<'_, UnixListener>) -> Self {
        Peer { uid: s.io().peer_cred().ok().map(|c| c.uid()) }
    }
}

#[derive(Clone)]
pub struct App {
    tx: Sender<Msg>,
    key: Arc<Key>,
    euid: u32,
    operators: Arc<Vec<u32>>,
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let code = StatusCode::from_u16(self.status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
        (code, Json(self.body)).into_response()
    }
}

/// The authenticated caller of a request.
pub struct Caller(pub Identity);


impl FromRequestParts<App> for Caller {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, app: &App) -> Result<Self, ApiError> {
        if let Some(h) = parts.headers.get(header::AUTHORIZATION) {
            let token = h.to_str().ok().and_then(|v| v.strip_prefix("Bearer ")).ok_or_else(|| ApiError::new(401, "Authorization: expected `Bearer TOKEN`"))?;
            let who = app.key.verify(token.trim(), unix_now()).map_err(|e| ApiError::new(401, format!("token refused: {e}")))?;
            return Ok(Caller(who));
        }
        if let Some(ConnectInfo(Peer { uid: Some(uid) })) = parts.extensions.get::<ConnectInfo<Peer>>() {
            let (user, gid) = local_user(*uid);
            let role = if Actor::is_operator_uid(app.euid, &app.operators, *uid) { Role::Operator } else { Role::User };
            return Ok(Caller(Identity { user, uid: *uid, gid, role }));
        }
        Err(ApiError::new(401, "authentication required: connect over the controller's Unix socket, or send `Authorization: Bearer TOKEN`"))
    }
}

async fn ask<T>(app: &App, f: impl FnOnce(oneshot::Sender<Result<T, ApiError>>) -> Msg) -> Result<T, ApiError> {
    let (tx, rx) = oneshot::channel();
    app.tx.send(f(tx)).map_err(|_| ApiError::new(503, "the controller is shutting down"))?;
    rx.await.map_err(|_| ApiError::new(503, "the controller is shutting down"))?
}

/// The largest request body, bytes (axum's default limit).
pub const BODY_LIMIT: usize = 2 * 1024 * 1024;

fn body<T>(b: Result<Json<T>, JsonRejection>) -> Result<T, ApiError> {
    b.map(|Json(v)| v).map_err(|e| match e.status() {
        StatusCode::PAYLOAD_TOO_LARGE => ApiError::new(413, format!("request body: larger than the limit of {} MiB", BODY_LIMIT >> 20)),
        _ => ApiError::new(400, format!("request body: {}", e.body_text())),
    })
}

async fn submit(State(app): State<App>, Caller(who): Caller, b: Result<Json<SubmitRequest>, JsonRejection>) -> Result<(StatusCode, Json<SubmitReply>), ApiError> {
    let req = body(b)?;
    let r = ask(&app, |reply| Msg::Submit { who, req, reply }).await?;
    Ok((StatusCode::CREATED, Json(r)))
}

async fn jobs(State(app): State<App>, Caller(_): Caller) -> Result<Json<Vec<JobInfo>>, ApiError> {
    Ok(Json(ask(&app, |reply| Msg::Jobs { reply }).await?))
}

fn job_id(s: &str) -> Result<JobRef, ApiError> {
    s.parse().map_err(|e: String| ApiError::new(400, e))
}

async fn job(State(app): State<App>, Caller(_): Caller, Path(id): Path<String>) -> Result<Json<JobInfo>, ApiError> {
    let id = job_id(&id)?;
    Ok(Json(ask(&app, |reply| Msg::Job { id, reply }).await?))
}

async fn script(State(app): State<App>, Caller(who): Caller, Path(id): Path<String>) -> Result<Json<JobScript>, ApiError> {
    let id = job_id(&id)?;
    Ok(Json(ask(&app, |reply| Msg::Script { who, id, reply }).await?))
}

async fn step_start(State(app): State<App>, Caller(who): Caller, Path(id): Path<String>, b: Result<Json<StepRequest>, JsonRejection>) -> Result<(StatusCode, Json<StepInfo>), ApiError> {
    let (job, req) = (job_id(&id)?, body(b)?);
    Ok((StatusCode::CREATED, Json(ask(&app, |reply| Msg::Step { who, job, req, reply }).await?)))
}

async fn end(State(app): State<App>, Caller(who): Caller, Path(id): Path<String>, b: Result<Json<EndRequest>, JsonRejection>) -> Result<Json<JobInfo>, ApiError> {
    let (job, req) = (job_id(&id)?, body(b)?);
    Ok(Json(ask(&app, |reply| Msg::End { who, job, code: req.code, reply }).await?))
}

fn step_id(s: &str) -> Result<u32, ApiError> {
    s.parse().map_err(|_| ApiError::new(400, format!("step {}: expected a step number (0, 1, ...)", tessera_core::quote::bounded(s))))
}

async fn step_info(State(app): State<App>, Caller(_): Caller, Path((id, step)): Path<(String, String)>) -> Result<Json<StepInfo>, ApiError> {
    let (job, step) = (job_id(&id)?, step_id(&step)?);
    Ok(Json(ask(&app, |reply| Msg::StepInfo { job, step, reply }).await?))
}

async fn step_signal(State(app): State<App>, Caller(who): Caller, Path((id, step)): Path<(String, String)>, b: Result<Json<SignalRequest>, JsonRejection>) -> Result<Json<StepInfo>, ApiError> {
    let (job, step, req) = (job_id(&id)?, step_id(&step)?, body(b)?);
    Ok(Json(ask(&app, |reply| Msg::StepSignal { who, job, step, signal: req.signal, reply }).await?))
}

async fn job_action(State(app): State<App>, Caller(who): Caller, Path((id, action)): Path<(String, String)>) -> Result<Json<JobInfo>, ApiError> {
    let job = job_id(&id)?;
    let op = JobOp::parse(&action).ok_or_else(|| ApiError::new(404, format!("job action {action:?}: expected cancel, hold, release, suspend, resume or requeue")))?;
    Ok(Json(ask(&app, |reply| Msg::JobOp { who, job, op, reply }).await?))
}

async fn cluster(State(app): State<App>, Caller(_): Caller) -> Result<Json<ClusterInfo>, ApiError> {
    Ok(Json(ask(&app, |reply| Msg::Cluster { reply }).await?))
}

async fn reconfigure(State(app): State<App>, Caller(who): Caller, b: Result<Json<ReconfigureRequest>, JsonRejection>) -> Result<Json<ReconfigureReply>, ApiError> {
    let req = body(b)?;
    Ok(Json(ask(&app, |reply| Msg::Reconfigure { who, req, reply }).await?))
}

async fn set_budget(State(app): State<App>, Caller(who): Caller, b: Result<Json<BudgetRequest>, JsonRejection>) -> Result<Json<BudgetReply>, ApiError> {
    let req = body(b)?;
    Ok(Json(ask(&app, |reply| Msg::SetBudget { who, req, reply }).await?))
}

async fn accounts(State(app): State<App>, Caller(_): Caller) -> Result<Json<tessera_core::share::Accounts>, ApiError> {
    Ok(Json(ask(&app, |reply| Msg::Accounts { reply }).await?))
}

async fn change_accounts(State(app): State<App>, Caller(who): Caller, b: Result<Json<AccountChange>, JsonRejection>) -> Result<Json<()>, ApiError> {
    let words = body(b)?.words;
    ask(&app, |reply| Msg::ChangeAccounts { who, words, reply }).await?;
    Ok(Json(()))
}

async fn shares(State(app): State<App>, Caller(_): Caller) -> Result<Json<Vec<ShareRow>>, ApiError> {
    Ok(Json(ask(&app, |reply| Msg::Shares { reply }).await?))
}

async fn priorities(State(app): State<App>, Caller(_): Caller) -> Result<Json<Vec<PrioRow>>, ApiError> {
    Ok(Json(ask(&app, |reply| Msg::Priorities { reply }).await?))
}

async fn reservations(State(app): State<App>, Caller(_): Caller) -> Result<Json<Vec<ReservationInfo>>, ApiError> {
    Ok(Json(ask(&app, |reply| Msg::Reservations { reply }).await?))
}

async fn reserve(State(app): State<App>, Caller(who): Caller, b: Result<Json<tessera_core::ResvRequest>, JsonRejection>) -> Result<Json<ReservationInfo>, ApiError> {
    let req = body(b)?;
    Ok(Json(ask(&app, |reply| Msg::Reserve { who, req, reply }).await?))
}

async fn unreserve(State(app): State<App>, Caller(who): Caller, Path(name): Path<String>) -> Result<Json<()>, ApiError> {
    ask(&app, |reply| Msg::Unreserve { who, name, reply }).await?;
    Ok(Json(()))
}

async fn nodes(State(app): State<App>, Caller(_): Caller) -> Result<Json<Vec<NodeInfo>>, ApiError> {
    Ok(Json(ask(&app, |reply| Msg::Nodes { reply }).await?))
}

async fn node_action(State(app): State<App>, Caller(who): Caller, Path((node, action)): Path<(String, String)>, b: Result<Json<NodeAction>, JsonRejection>) -> Result<Json<NodeInfo>, ApiError> {
    let change = match action.as_str() {
        "drain" => NodeChange::Drain,
        "resume" => NodeChange::Resume,
        "down" => NodeChange::Down,
        "up" => NodeChange::Up,
        _ => return Err(ApiError::new(404, format!("node action {action:?}: expected drain, resume, down or up"))),
    };
    // the body is optional (no body, no reason); a body that is there must be one
    let reason = match b {
        Err(JsonRejection::MissingJsonContentType(_)) => String::new(),
        b => body(b)?.reason,
    };
    Ok(Json(ask(&app, |reply| Msg::NodeOp { who, node, change, reason, reply }).await?))
}

async fn register(State(app): State<App>, Caller(who): Caller, b: Result<Json<RegisterRequest>, JsonRejection>) -> Result<Json<RegisterReply>, ApiError> {
    let req = body(b)?;
    Ok(Json(ask(&app, |reply| Msg::Register { who, req, reply }).await?))
}

async fn poll(State(app): State<App>, Caller(who): Caller, b: Result<Json<AgentMessage>, JsonRejection>) -> Result<Json<PollReply>, ApiError> {
    let msg = body(b)?;
    Ok(Json(ask(&app, |reply| Msg::Poll { who, msg, reply }).await?))
}

async fn report(State(app): State<App>, Caller(who): Caller, b: Result<Json<AgentMessage>, JsonRejection>) -> Result<StatusCode, ApiError> {
    let msg = body(b)?;
    ask(&app, |reply| Msg::Report { who, msg, reply }).await?;
    Ok(StatusCode::NO_CONTENT)
}

async fn openapi(Caller(_): Caller) -> Response {
    ([(header::CONTENT_TYPE, "application/json")], crate::openapi::DOCUMENT).into_response()
}

async fn metrics(State(app): State<App>, Caller(_): Caller) -> Result<Response, ApiError> {
    let text = ask(&app, |reply| Msg::Metrics { reply }).await?;
    Ok(([(header::CONTENT_TYPE, "text/plain; version=0.0.4")], text).into_response())
}

/// The live dashboard: aggregates only (counts by partition, reason, node
/// state; power; rates), so it needs no credentials and a browser can open it.
async fn dashboard(State(app): State<App>) -> Result<Response, ApiError> {
    let d = ask(&app, |reply| Msg::Dashboard { reply }).await?;
    // drawn outside the actor
    let html = tokio::task::spawn_blocking(move || d.page(DASHBOARD_REFRESH_S).render()).await.map_err(|_| ApiError::new(500, "drawing the dashboard failed"))?;
    Ok(([(header::CONTENT_TYPE, "text/html; charset=utf-8"), (header::CACHE_CONTROL, "no-store")], html).into_response())
}

/// Seconds between the dashboard's reloads.
pub const DASHBOARD_REFRESH_S: u32 = 5;

pub fn router(app: App) -> Router {
    Router::new()
        .route("/v1/jobs", post(submit).get(jobs))
        .route("/v1/jobs/{id}", get(job))
        .route("/v1/jobs/{id}/script", get(script))
        .route("/v1/jobs/{id}/{action}", post(job_action))
        .route("/v1/jobs/{id}/end", post(end))
        .route("/v1/jobs/{id}/steps", post(step_start))
        .route("/v1/jobs/{id}/steps/{step}", get(step_info))
        .route("/v1/jobs/{id}/steps/{step}/signal", post(step_signal))
        .route("/v1/nodes", get(nodes))
        .route("/v1/cluster", get(cluster).post(reconfigure))
        .route("/v1/cluster/budget", post(set_budget))
        .route("/v1/accounts", get(accounts).post(change_accounts))
        .route("/v1/shares", get(shares))
        .route("/v1/priorities", get(priorities))
        .route("/v1/reservations", get(reservations).post(reserve))
        .route("/v1/reservations/{name}", axum::routing::delete(unreserve))
        .route("/v1/nodes/{name}/{action}", post(node_action))
        .route("/v1/agent/register", post(register))
        .route("/v1/agent/poll", post(poll))
        .route("/v1/agent/report", post(report))
        .route("/v1/openapi.json", get(openapi))
        .route("/metrics", get(metrics))
        .route("/", get(dashboard))
        .with_state(app)
}

/// Run a controller until SIGINT or SIGTERM: open (or recover) the state
/// directory, start the actor, listen on TCP and on the Unix socket, and write
/// `controller.json` once both listen.
pub async fn serve(cfg: Config) -> Result<()> {
    // a panic in any thread or task ends the process (fail-stop)
    crate::failstop::install();
    // one controller per state directory, and only the operator reads it
    let _lock = tessera_proto::statedir::lock(&cfg.state_dir, "controller")?;
    tessera_proto::statedir::private_umask();
    let key = Key::load(&cfg.key_path(), true)?;
    let actor = Actor::open(cfg.clone())?;
    // once the stores exist: their modes, and those of an older version's files
    tessera_proto::statedir::secure(&cfg.state_dir, crate::PUBLIC_FILES).with_context(|| format!("securing state directory {}", cfg.state_dir.display()))?;
    let euid = actor.euid();
    let (tx, rx) = std::sync::mpsc::channel();
    // fail-stop: a controller that cannot write its journal or its accounting
    // stops at once (as one that panics does); a restart recovers from what is durable
    let thread = std::thread::Builder::new().name("tessera-actor".into()).spawn(move || {
        if let Err(e) = actor.run(rx) {
            tracing::error!("the controller stops: {e:#}");
            eprintln!("error: the controller stops: {e:#}");
            std::process::exit(crate::failstop::EXIT_FAILSTOP);
        }
    })?;
    let app = App { tx: tx.clone(), key: Arc::new(key), euid, operators: Arc::new(cfg.operators.clone()) };
    let tcp = TcpListener::bind(cfg.listen).await.with_context(|| format!("listening on {}", cfg.listen))?;
    let addr = tcp.local_addr()?;
    let tcp = Tcp(tcp);
    let sock = cfg.socket_path();
    let _ = std::fs::remove_file(&sock);
    let unix = UnixListener::bind(&sock).with_context(|| format!("listening on {}", sock.display()))?;
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&sock, std::fs::Permissions::from_mode(0o666))?;
    }
    let ep = Endpoint { url: format!("http://{addr}"), socket: sock.clone(), pid: std::process::id() };
    let tmp = cfg.state_dir.join("controller.json.tmp");
    std::fs::write(&tmp, serde_json::to_vec_pretty(&ep)?)?;
    // every local user reads it, to find the socket
    std::fs::set_permissions(&tmp, std::os::unix::fs::PermissionsExt::from_mode(0o644))?;
    std::fs::rename(&tmp, cfg.state_dir.join("controller.json"))?;
    tracing::info!(url = %ep.url, socket = %sock.display(), "controller listening");
    let (stop_tx, stop_rx) = tokio::sync::watch::channel(false);
    let r = router(app);
    let mut s1 = stop_rx.clone();
    let mut s2 = stop_rx;
    let rt = r.clone();
    let t = tokio::spawn(async move {
        axum::serve(tcp, rt.into_make_service_with_connect_info::<Peer>())
            .with_graceful_shutdown(async move {
                let _ = s1.changed().await;
            })
            .await
    });
    let u = tokio::spawn(async move {
        axum::serve(unix, r.into_make_service_with_connect_info::<Peer>())
            .with_graceful_shutdown(async move {
                let _ = s2.changed().await;
            })
            .await
    });
    let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())?;
    tokio::select! {
        _ = tokio::signal::ctrl_c() => {}
        _ = term.recv() => {}
    }
    tracing::info!("controller stopping");
    let _ = stop_tx.send(true);
    let _ = tx.send(Msg::Shutdown);
    drop(tx);
    let _ = tokio::time::timeout(std::time::Duration::from_secs(2), async {
        let _ = t.await;
        let _ = u.await;
    })
    .await;
    let _ = std::fs::remove_file(cfg.state_dir.join("controller.json"));
    thread.join().map_err(|_| anyhow::anyhow!("the actor panicked"))?;
    Ok(())
}
