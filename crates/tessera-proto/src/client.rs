//! A small HTTP/1.1 client for the controller's API, over TCP or a Unix socket,
//! keeping its connection alive between requests. The CLI and the agents use it.

use crate::api::ErrorReply;
use http_body_util::{BodyExt, Full};
use hyper::body::Bytes;
use hyper::client::conn::http1::SendRequest;
use hyper::{Method, Request, StatusCode};
use hyper_util::rt::TokioIo;
use serde::de::DeserializeOwned;
use serde::Serialize;
use std::path::PathBuf;

/// Where the controller listens.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Target {
    /// `host:port`
    Tcp(String),
    Unix(PathBuf),
}

impl Target {
    /// `http://host:port` or `unix:/path/to/socket`.
    pub fn parse(url: &str) -> Result<Target, String> {
        if let Some(p) = url.strip_prefix("unix:") {
            return Ok(Target::Unix(PathBuf::from(p)));
        }
        let rest = url.strip_prefix("http://").ok_or_else(|| format!("controller URL {url:?}: expected http://HOST:PORT or unix:/PATH"))?;
        let hostport = rest.trim_end_matches('/');
        if hostport.is_empty() || hostport.contains('/') || !hostport.contains(':') {
            return Err(format!("controller URL {url:?}: expected http://HOST:PORT or unix:/PATH"));
        }
        Ok(Target::Tcp(hostport.to_string()))
    }

    pub fn describe(&self) -> String {
        match self {
            Target::Tcp(h) => format!("http://{h}"),
            Target::Unix(p) => format!("unix:{}", p.display()),
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    #[error("cannot reach the controller at {target}: {source}")]
    Connect {
        target: String,
        #[source]
        source: std::io::Error,
    },
    #[error("talking to the controller at {target}: {message}")]
    Protocol { target: String, message: String },
    #[error("{}", .body.error)]
    Api { status: u16, body: ErrorReply },
}

impl ClientError {
    pub fn status(&self) -> Option<u16> {
        match self {
            ClientError::Api { status, .. } => Some(*status),
            _ => None,
        }
    }
}

pub struct Client {
    target: Target,
    token: Option<String>,
    conn: Option<SendRequest<Full<Bytes>>>,
}

impl Client {
    pub fn new(target: Target, token: Option<String>) -> Client {
        Client { target, token, conn: None }
    }

    pub fn target(&self) -> &Target {
        &self.target
    }

    async fn connect(&mut self) -> Result<&mut SendRequest<Full<Bytes>>, ClientError> {
        if self.conn.as_ref().is_some_and(|c| !c.is_closed()) {
            return Ok(self.conn.as_mut().unwrap());
        }
        let target = self.target.describe();
        let cerr = |source| ClientError::Connect { target: target.clone(), source };
        let perr = |e: hyper::Error| ClientError::Protocol { target: target.clone(), message: chain(&e) };
        let sender = match &self.target {
            Target::Tcp(h) => {
                let s = tokio::net::TcpStream::connect(h).await.map_err(cerr)?;
                let _ = s.set_nodelay(true);
                let (sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(s)).await.map_err(perr)?;
                tokio::spawn(conn);
                sender
            }
            Target::Unix(p) => {
                let s = tokio::net::UnixStream::connect(p).await.map_err(cerr)?;
                let (sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(s)).await.map_err(perr)?;
                tokio::spawn(conn);
                sender
            }
        };
        self.conn = Some(sender);
        Ok(self.conn.as_mut().unwrap())
    }

    /// Send a request and decode the JSON reply (an empty reply decodes as `null`).
    pub async fn call<B: Serialize, T: DeserializeOwned>(&mut self, method: Method, path: &str, body: Option<&B>) -> Result<T, ClientError> {
        let (status, bytes) = self.raw(method, path, body.map(|b| serde_json::to_vec(b).expect("request bodies serialize"))).await?;
        let target = self.target.describe();
        if !status.is_success() {
            let body = serde_json::from_slice::<ErrorReply>(&bytes).unwrap_or_else(|_| ErrorReply {
                error: format!("HTTP {status}: {}", String::from_utf8_lossy(&bytes)),
                option: None,
                value: None,
                expected: None,
                line: None,
            });
            return Err(ClientError::Api { status: status.as_u16(), body });
        }
        let bytes = if bytes.is_empty() { Bytes::from_static(b"null") } else { bytes };
        serde_json::from_slice(&bytes).map_err(|e| ClientError::Protocol { target, message: format!("unexpected reply: {e}") })
    }

    /// [`Client::call`], sent again while the controller cannot be reached or
    /// the connection breaks before the reply (a controller restarting), for up
    /// to `patience`. Only for requests that may arrive twice: reads, and
    /// submissions with an idempotency key.
    pub async fn call_patiently<B: Serialize, T: DeserializeOwned>(&mut self, method: Method, path: &str, body: Option<&B>, patience: std::time::Duration) -> Result<T, ClientError> {
        let t0 = tokio::time::Instant::now();
        loop {
            match self.call(method.clone(), path, body).await {
                Err(ClientError::Connect { .. } | ClientError::Protocol { .. }) if t0.elapsed() < patience => {
                    self.conn = None;
                    tokio::time::sleep(std::time::Duration::from_millis(100)).await;
                }
                r => return r,
            }
        }
    }

    /// Send a request; the status and the body as they came.
    pub async fn raw(&mut self, method: Method, path: &str, body: Option<Vec<u8>>) -> Result<(StatusCode, Bytes), ClientError> {
        let target = self.target.describe();
        let host = match &self.target {
            Target::Tcp(h) => h.clone(),
            Target::Unix(_) => "localhost".to_string(),
        };
        let mut req = Request::builder().method(method).uri(path).header("host", host);
        if let Some(t) = &self.token {
            req = req.header("authorization", format!("Bearer {t}"));
        }
        let has_body = body.is_some();
        if has_body {
            req = req.header("content-type", "application/json");
        }
        let req = req.body(Full::new(Bytes::from(body.unwrap_or_default()))).map_err(|e| ClientError::Protocol { target: target.clone(), message: e.to_string() })?;
        let conn = self.connect().await?;
        // a new connection is ready only once its task has run (at once on a
        // single-threaded runtime, not necessarily on a multi-threaded one)
        let sent = match conn.ready().await {
            Ok(()) => conn.send_request(req).await,
            Err(e) => Err(e),
        };
        let res = match sent {
            Ok(r) => r,
            Err(e) => {
                self.conn = None;
                return Err(ClientError::Protocol { target, message: chain(&e) });
            }
        };
        let status = res.status();
        let bytes = res.into_body().collect().await.map_err(|e| ClientError::Protocol { target, message: chain(&e) })?.to_bytes();
        Ok((status, bytes))
    }
}

/// An error and its causes, as one line.
fn chain(e: &dyn std::error::Error) -> String {
    let mut s = e.to_string();
    let mut cause = e.source();
    while let Some(c) = cause {
        s.push_str(": ");
        s.push_str(&c.to_string());
        cause = c.source();
    }
    s
}
