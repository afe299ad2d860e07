//! Who is calling. Local users come over the controller's Unix socket, where
//! the kernel tells who is at the other end (`SO_PEERCRED`); remote users and
//! agents present a token signed (HMAC-SHA-256) with the cluster key, a file
//! readable only by the operator (`cluster.key` in the state directory, mode
//! 0600). A token reads `tsr1.ROLE.USER.UID.EXPIRY.SIGNATURE`.

use hmac::{Hmac, Mac};
use serde::{Deserialize, Serialize};
use sha2::Sha256;
use std::path::Path;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Role {
    /// Acts on its own jobs; reads the queue and the nodes.
    User,
    /// Acts on every job and node.
    Operator,
    /// A node agent: registers nodes, polls, reports; nothing else.
    Agent,
}

impl Role {
    pub fn name(self) -> &'static str {
        match self {
            Role::User => "user",
            Role::Operator => "operator",
            Role::Agent => "agent",
        }
    }

    pub fn parse(s: &str) -> Option<Role> {
        match s {
            "user" => Some(Role::User),
            "operator" => Some(Role::Operator),
            "agent" => Some(Role::Agent),
            _ => None,
        }
    }
}

/// An authenticated caller.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Identity {
    pub user: String,
    pub uid: u32,
    pub gid: u32,
    pub role: Role,
}

/// The cluster key.
#[derive(Clone)]
pub struct Key(Vec<u8>);

#[derive(Debug, thiserror::Error)]
pub enum KeyError {
    #[error("cluster key {path}: {source}")]
    Io {
        path: String,
        #[source]
        source: std::io::Error,
    },
    #[error("cluster key {path}: expected 64 hexadecimal digits (32 bytes)")]
    Malformed { path: String },
    #[error("cluster key {path} is readable by others (mode {mode:o}); it must be 0600 or stricter")]
    Open { path: String, mode: u32 },
}

impl Key {
    /// Read the key file, creating it (32 random bytes, mode 0600) if `create`.
    pub fn load(path: &Path, create: bool) -> Result<Key, KeyError> {
        use std::io::Write;
        use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
        let p = path.display().to_string();
        let io = |source| KeyError::Io { path: p.clone(), source };
        if create && !path.exists() {
            let bytes: [u8; 32] = rand::random();
            let mut f = std::fs::OpenOptions::new().write(true).create_new(true).mode(0o600).open(path).map_err(io)?;
            f.write_all(hex(&bytes).as_bytes()).map_err(io)?;
            f.sync_all().map_err(io)?;
        }
        let meta = std::fs::metadata(path).map_err(io)?;
        let mode = meta.permissions().mode() & 0o777;
        if mode & 0o077 != 0 {
            return Err(KeyError::Open { path: p, mode });
        }
        let text = std::fs::read_to_string(path).map_err(io)?;
        let bytes = unhex(text.trim()).filter(|b| b.len() == 32).ok_or(KeyError::Malformed { path: p })?;
        Ok(Key(bytes))
    }

    pub fn from_bytes(b: &[u8]) -> Key {
        Key(b.to_vec())
    }

    fn mac(&self, body: &str) -> String {
        let mut m = Hmac::<Sha256>::new_from_slice(&self.0).expect("HMAC takes any key length");
        m.update(body.as_bytes());
        hex(&m.finalize().into_bytes())
    }

    /// A token for `user` (uid) in `role`, valid until `expiry` (Unix seconds).
    pub fn sign(&self, role: Role, user: &str, uid: u32, expiry: i64) -> String {
        let body = format!("tsr1.{}.{}.{}.{}", role.name(), user, uid, expiry);
        let sig = self.mac(&body);
        format!("{body}.{sig}")
    }

    /// The identity a token proves at `now`, or why it proves none.
    pub fn verify(&self, token: &str, now: i64) -> Result<Identity, &'static str> {
        let (body, sig) = token.rsplit_once('.').ok_or("malformed token")?;
        let parts: Vec<&str> = body.split('.').collect();
        let [v, role, user, uid, expiry] = parts.as_slice() else { return Err("malformed token") };
        if *v != "tsr1" {
            return Err("unknown token version");
        }
        // constant-time comparison through the MAC's own verify
        let mut m = Hmac::<Sha256>::new_from_slice(&self.0).expect("HMAC takes any key length");
        m.update(body.as_bytes());
        let given = unhex(sig).ok_or("malformed token signature")?;
        m.verify_slice(&given).map_err(|_| "bad token signature")?;
        let expiry: i64 = expiry.parse().map_err(|_| "malformed token expiry")?;
        if expiry < now {
            return Err("token expired");
        }
        let role = Role::parse(role).ok_or("unknown role")?;
        let uid: u32 = uid.parse().map_err(|_| "malformed token uid")?;
        if user.is_empty() {
            return Err("token names no user");
        }
        Ok(Identity { user: user.to_string(), uid, gid: uid, role })
    }
}

pub fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

fn unhex(s: &str) -> Option<Vec<u8>> {
    if s.len() % 2 != 0 {
        return None;
    }
    (0..s.len()).step_by(2).map(|i| u8::from_str_radix(s.get(i..i + 2)?, 16).ok()).collect()
}

/// The name and primary group of a local uid (`uid<N>` if it has no name).
pub fn local_user(uid: u32) -> (String, u32) {
    match nix::unistd::User::from_uid(nix::unistd::Uid::from_raw(uid)) {
        Ok(Some(u)) => (u.name, u.gid.as_raw()),
        _ => (format!("uid{uid}"), uid),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_token_proves_its_identity_until_it_expires_and_not_once_altered() {
        let k = Key::from_bytes(&[7; 32]);
        let t = k.sign(Role::User, "alice", 1000, 2_000);
        assert_eq!(k.verify(&t, 1_999).unwrap(), Identity { user: "alice".into(), uid: 1000, gid: 1000, role: Role::User });
        assert_eq!(k.verify(&t, 2_001), Err("token expired"));
        let forged = t.replace(".user.", ".operator.");
        assert_eq!(k.verify(&forged, 1_000), Err("bad token signature"));
        let other = Key::from_bytes(&[8; 32]);
        assert_eq!(other.verify(&t, 1_000), Err("bad token signature"));
    }
}

/// `tessera token create`'s options.
#[derive(clap::Args, Debug)]
pub struct TokenArgs {
    /// The user the token authenticates.
    #[arg(long)]
    pub user: String,
    /// Uid the jobs of this user run as (default: the local user's, if any).
    #[arg(long)]
    pub uid: Option<u32>,
    /// user, operator or agent.
    #[arg(long, default_value = "user")]
    pub role: String,
    /// Validity (Slurm's time syntax: 1-0 is one day).
    #[arg(long, default_value = "30-0")]
    pub ttl: String,
    /// Key file (default: STATE_DIR/cluster.key).
    #[arg(long)]
    pub key_file: Option<std::path::PathBuf>,
    /// State directory of the controller (its socket, endpoint file and key).
    #[arg(long, env = "TESSERA_STATE_DIR", default_value = "tessera-state")]
    pub state_dir: std::path::PathBuf,
}

impl TokenArgs {
    /// The signed token these options ask for.
    pub fn create(&self) -> Result<String, String> {
        let role = Role::parse(&self.role).ok_or_else(|| format!("--role {:?}: expected user, operator or agent", self.role))?;
        let ttl = tessera_proto::submit::parse_time_limit("--ttl", &self.ttl).map_err(|e| e.to_string())?.unwrap_or(10 * 365 * 86400);
        let key_path = self.key_file.clone().unwrap_or_else(|| self.state_dir.join("cluster.key"));
        let key = Key::load(&key_path, false).map_err(|e| e.to_string())?;
        let uid = match self.uid {
            Some(u) => u,
            None => nix::unistd::User::from_name(&self.user).ok().flatten().map(|u| u.uid.as_raw()).ok_or_else(|| format!("--user {}: no such local user; give --uid", self.user))?,
        };
        Ok(key.sign(role, &self.user, uid, tessera_proto::unix_now() + ttl))
    }
}
