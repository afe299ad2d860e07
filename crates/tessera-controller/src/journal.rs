//! The controller's durable state: one SQLite file (`state.db` in the state
//! directory, WAL, `synchronous = FULL`) holding the journal of events, the last
//! snapshot and the controller's settings. Every batch of events is one
//! transaction, committed before the engine sees it and before any submitter is
//! told its job is accepted (group commit: one fsync for every request that
//! arrived while the previous batch was being written). A snapshot replaces the
//! journal up to its sequence number in the same transaction.

use crate::state::{Event, State};
use rusqlite::{params, Connection, OptionalExtension};
use std::path::{Path, PathBuf};

const MIGRATIONS: &[&str] = &["
CREATE TABLE settings (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE journal (seq INTEGER PRIMARY KEY, now INTEGER NOT NULL, events TEXT NOT NULL);
CREATE TABLE snapshot (id INTEGER PRIMARY KEY CHECK (id = 1), seq INTEGER NOT NULL, state TEXT NOT NULL);
"];

#[derive(Debug, thiserror::Error)]
pub enum JournalError {
    #[error("state database {path}: {source}")]
    Sqlite {
        path: PathBuf,
        #[source]
        source: rusqlite::Error,
    },
    #[error("state database {path}: entry {seq} is not a journal entry this build reads: {source}")]
    Decode {
        path: PathBuf,
        seq: i64,
        #[source]
        source: serde_json::Error,
    },
    #[error("state database {path} has schema version {found}; this build knows up to {known}")]
    TooNew { path: PathBuf, found: i64, known: i64 },
}

pub struct Journal {
    conn: Connection,
    path: PathBuf,
    /// Entries written since the last snapshot.
    pub since_snapshot: u64,
    last_seq: i64,
}

/// What a restart finds: the snapshot (if any) and the entries after it.
pub struct Recovered {
    pub snapshot: Option<(i64, State)>,
    pub entries: Vec<(i64, i64, Vec<Event>)>,
}

impl Journal {
    pub fn open(path: &Path) -> Result<Journal, JournalError> {
        let e = |source| JournalError::Sqlite { path: path.to_path_buf(), source };
        let conn = Connection::open(path).map_err(e)?;
        conn.pragma_update(None, "journal_mode", "WAL").map_err(e)?;
        conn.pragma_update(None, "synchronous", "FULL").map_err(e)?;
        let version: i64 = conn.pragma_query_value(None, "user_version", |r| r.get(0)).map_err(e)?;
        if version > MIGRATIONS.len() as i64 {
            return Err(JournalError::TooNew { path: path.to_path_buf(), found: version, known: MIGRATIONS.len() as i64 });
        }
        for (i, sql) in MIGRATIONS.iter().enumerate().skip(version as usize) {
            conn.execute_batch(&format!("BEGIN; {sql} PRAGMA user_version = {}; COMMIT;", i + 1)).map_err(e)?;
        }
        let last_seq: i64 = conn
            .query_row("SELECT max(seq) FROM (SELECT seq FROM journal UNION ALL SELECT seq FROM snapshot)", [], |r| r.get::<_, Option<i64>>(0))
            .map_err(e)?
            .unwrap_or(0);
        let since: i64 = conn.query_row("SELECT count(*) FROM journal", [], |r| r.get(0)).map_err(e)?;
        Ok(Journal { conn, path: path.to_path_buf(), since_snapshot: since as u64, last_seq })
    }

    fn err(&self) -> impl Fn(rusqlite::Error) -> JournalError + '_ {
        |source| JournalError::Sqlite { path: self.path.clone(), source }
    }

    pub fn setting(&self, key: &str) -> Result<Option<String>, JournalError> {
        self.conn.query_row("SELECT value FROM settings WHERE key = ?1", params![key], |r| r.get(0)).optional().map_err(self.err())
    }

    pub fn set_setting(&self, key: &str, value: &str) -> Result<(), JournalError> {
        self.conn.execute("INSERT OR REPLACE INTO settings (key, value) VALUES (?1, ?2)", params![key, value]).map_err(self.err())?;
        Ok(())
    }

    /// Append one batch (one transaction, durable on return). Returns its sequence number.
    pub fn append(&mut self, now: i64, events: &[Event]) -> Result<i64, JournalError> {
        let text = serde_json::to_string(events).expect("events serialize");
        self.last_seq += 1;
        let seq = self.last_seq;
        self.conn.prepare_cached("INSERT INTO journal (seq, now, events) VALUES (?1, ?2, ?3)").map_err(self.err())?.execute(params![seq, now, text]).map_err(self.err())?;
        self.since_snapshot += 1;
        Ok(seq)
    }

    /// Replace the snapshot with `state` as of the last appended entry, and drop
    /// the journal up to it.
    pub fn snapshot(&mut self, state: &State) -> Result<(), JournalError> {
        let text = serde_json::to_string(state).expect("state serializes");
        let seq = self.last_seq;
        let tx = self.conn.transaction().map_err(|source| JournalError::Sqlite { path: self.path.clone(), source })?;
        let e = |source| JournalError::Sqlite { path: self.path.clone(), source };
        tx.execute("INSERT OR REPLACE INTO snapshot (id, seq, state) VALUES (1, ?1, ?2)", params![seq, text]).map_err(e)?;
        tx.execute("DELETE FROM journal WHERE seq <= ?1", params![seq]).map_err(e)?;
        tx.commit().map_err(e)?;
        self.since_snapshot = 0;
        Ok(())
    }

    /// The snapshot and the journal after it.
    pub fn recover(&self) -> Result<Recovered, JournalError> {
        let snap: Option<(i64, String)> = self.conn.query_row("SELECT seq, state FROM snapshot WHERE id = 1", [], |r| Ok((r.get(0)?, r.get(1)?))).optional().map_err(self.err())?;
        let snapshot = match snap {
            Some((seq, text)) => Some((seq, serde_json::from_str(&text).map_err(|source| JournalError::Decode { path: self.path.clone(), seq, source })?)),
            None => None,
        };
        let after = snapshot.as_ref().map_or(0, |(s, _)| *s);
        let mut stmt = self.conn.prepare("SELECT seq, now, events FROM journal WHERE seq > ?1 ORDER BY seq").map_err(self.err())?;
        let rows = stmt
            .query_map(params![after], |r| Ok((r.get::<_, i64>(0)?, r.get::<_, i64>(1)?, r.get::<_, String>(2)?)))
            .map_err(self.err())?;
        let mut entries = Vec::new();
        for row in rows {
            let (seq, now, text) = row.map_err(self.err())?;
            let events = serde_json::from_str(&text).map_err(|source| JournalError::Decode { path: self.path.clone(), seq, source })?;
            entries.push((seq, now, events));
        }
        Ok(Recovered { snapshot, entries })
    }
}
