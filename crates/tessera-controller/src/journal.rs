//! The controller's durable state: one SQLite file (`state.db` in the state
//! directory, WAL, `synchronous = FULL`) holding the journal of events, the last
//! snapshot and the controller's settings. Every batch of events is one
//! transaction, committed before the engine sees it and before any submitter is
//! told its job is accepted (group commit: one fsync for every request that
//! arrived while the previous batch was being written). A snapshot replaces the
//! journal up to its sequence number in the same transaction.
//!
//! Two versions, each checked when the file is opened and read:
//!
//! * the schema (`PRAGMA user_version`, [`MIGRATIONS`]): the tables. A file of a
//!   newer schema is refused; an older one is migrated.
//! * the state format ([`STATE_FORMAT`]), kept in every snapshot and journal
//!   row (`format`): the layout of the JSON in it, which is the layout of the
//!   controller's [`State`] and [`Event`] types. A row of another format is
//!   upgraded by [`UPGRADES`] before it is decoded, or refused with a message
//!   naming its format and this build's; it is never decoded as if it were of
//!   this build's format. Changing what `State` or `Event` serialize to means a
//!   new format: the test `state_format` (crates/tessera-controller/tests/it)
//!   fails until an upgrade is added here and the fixture of the new format is
//!   written (`scripts/regen-state-fixture`).

use crate::state::{Event, State};
use rusqlite::{params, Connection, OptionalExtension};
use serde::de::DeserializeOwned;
use serde_json::Value;
use std::path::{Path, PathBuf};

const MIGRATIONS: &[&str] = &[
    "
CREATE TABLE settings (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE journal (seq INTEGER PRIMARY KEY, now INTEGER NOT NULL, events TEXT NOT NULL);
CREATE TABLE snapshot (id INTEGER PRIMARY KEY CHECK (id = 1), seq INTEGER NOT NULL, state TEXT NOT NULL);
",
    // the state format of each row; rows written before it are format 0
    "
ALTER TABLE journal ADD COLUMN format INTEGER NOT NULL DEFAULT 0;
ALTER TABLE snapshot ADD COLUMN format INTEGER NOT NULL DEFAULT 0;
",
];

/// What a row holds: the snapshot (a [`State`]) or a journal entry (its
/// batch of [`Event`]s).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stored {
    Snapshot,
    Events,
}

/// Turns a row of one state format into the next, or refuses it (saying why).
pub type Upgrade = fn(Stored, Value) -> Result<Value, String>;

/// `UPGRADES[k]` turns a row of state format `k` into format `k + 1`; this
/// build writes format `UPGRADES.len()` ([`STATE_FORMAT`]). When the layout of
/// `State` or `Event` changes, append one: it rewrites the JSON of the
/// previous format into the new layout, or refuses it (`Err` with the reason:
/// such a state directory is then refused, never misread).
pub const UPGRADES: &[Upgrade] = &[
    // 0 → 1: formats are recorded from format 1 on; the layout is unchanged,
    // so a state written before (format 0) is read as it is
    |_, v| Ok(v),
    // 1 → 2: a job's own node-set request travels with it (the engine kept
    // registered requests, never freed, that specs named by index); set lists
    // count their users; the controller keeps the engine's wake-up and
    // whether a run's agent enforced its limit
    upgrade_1_to_2,
    // 2 → 3: dependencies, array throttles and holds are the engine's (they
    // were the controller's): each queued job's gate, each array's throttle
    upgrade_2_to_3,
    // 3 → 4: the snapshot nests the controller's ledger beside the engine
    // (its fields were the snapshot's own, beside `engine`)
    |what, v| match (what, v) {
        (Stored::Events, v) => Ok(v),
        (Stored::Snapshot, Value::Object(mut o)) => {
            let engine = o.remove("engine").ok_or("a format-3 snapshot without the engine")?;
            Ok(serde_json::json!({ "engine": engine, "ledger": o }))
        }
        (Stored::Snapshot, _) => Err("a format-3 snapshot that is not an object".to_string()),
    },
    // 4 → 5: a job's user hold is the engine's (its gate), not the meta's
    |what, mut v| {
        if what == Stored::Snapshot {
            for m in v["ledger"]["jobs"].as_object_mut().ok_or("a format-4 snapshot without jobs")?.values_mut() {
                m.as_object_mut().ok_or("a format-4 job that is not an object")?.remove("user_hold");
            }
        }
        Ok(v)
    },
    // 5 → 6: the fair-share state keeps the usage its tree was worked out
    // from and the factors it gave, not every association's figures
    upgrade_5_to_6,
    // 6 → 7: a queued job's position is the queue's (worked out when read
    // back), not a field of the job's entry
    |what, mut v| {
        if what == Stored::Snapshot {
            if let Some(slots) = v["engine"]["t"]["slots"].as_array_mut() {
                for slot in slots.iter_mut().filter_map(Value::as_object_mut) {
                    slot.remove("queue_pos");
                }
            }
        }
        Ok(v)
    },
    // 7 → 8: the node engine indexes its free nodes (no position per node in
    // the first partition any more) and counts the jobs whose memory can
    // bind; a state written before counted none, and its memory clusters
    // were never fungible, so the least memory per core that no job may
    // exceed is unbounded (u64::MAX)
    |what, mut v| {
        if what == Stored::Snapshot {
            if let Some(m) = v["engine"]["m"].get_mut("Nodes").and_then(Value::as_object_mut) {
                m.remove("pos_in_part");
                m.insert("mem_ratio".into(), Value::from(u64::MAX));
            }
        }
        Ok(v)
    },
];

/// Format 5 → 6 (see [`UPGRADES`]).
fn upgrade_5_to_6(what: Stored, mut v: Value) -> Result<Value, String> {
    if what == Stored::Events {
        return Ok(v);
    }
    let Some(share) = v["engine"].get_mut("share").and_then(Value::as_object_mut) else {
        return Ok(v);
    };
    let rows = share.remove("rows").ok_or("a format-5 fair-share state without its tree")?;
    let fairshare: Vec<Value> = rows.as_array().ok_or("a format-5 fair-share tree that is not a list")?.iter().map(|r| r["fairshare"].clone()).collect();
    // the tree was worked out from the last calculation's usage unless one
    // is pending (then it is worked out afresh when next needed)
    let stale = share.get("stale").and_then(Value::as_bool).unwrap_or(false);
    let usage = match share.get("calc_usage") {
        Some(u) if !stale => u.clone(),
        _ => Value::Array(Vec::new()),
    };
    share.insert("tree".into(), serde_json::json!({ "usage": usage, "fairshare": fairshare }));
    Ok(v)
}

/// Format 2 → 3 (see [`UPGRADES`]).
fn upgrade_2_to_3(what: Stored, mut v: Value) -> Result<Value, String> {
    use serde_json::json;
    if what == Stored::Events {
        return Ok(v);
    }
    let bad = |what: &str| format!("a format-2 snapshot without {what}");
    let obj = v.as_object_mut().ok_or_else(|| bad("an object"))?;
    let dependents = obj.remove("dependents").unwrap_or(json!({}));
    let arrays = obj.remove("arrays").unwrap_or(json!({}));
    // each job's meta, without the fields the engine now keeps
    let mut metas = serde_json::Map::new();
    for (id, m) in obj.get_mut("jobs").and_then(Value::as_object_mut).ok_or_else(|| bad("jobs"))? {
        let m = m.as_object_mut().ok_or_else(|| bad("a job's meta"))?;
        let waits = m.remove("waits_for").unwrap_or(json!([]));
        let throttled = m.remove("throttled").unwrap_or(json!(false));
        metas.insert(id.clone(), json!({ "waits": waits, "throttled": throttled, "hold": m.get("user_hold").cloned().unwrap_or(json!(false)), "array": m.get("array").cloned().unwrap_or(Value::Null) }));
    }
    let engine = obj.get_mut("engine").ok_or_else(|| bad("the engine"))?;
    let slot_of: std::collections::BTreeMap<String, Value> = engine["t"]["ids"].as_object().cloned().unwrap_or_default().into_iter().collect();
    let kind = |k: &Value| match k.as_str() {
        Some("AfterAny") => Ok(json!("Any")),
        Some("AfterOk") => Ok(json!("Ok")),
        Some("AfterNotOk") => Ok(json!("NotOk")),
        _ => Err(format!("a format-2 dependency of unknown kind {k}")),
    };
    let limit_of = |a: &Value| arrays.get(a.to_string()).map(|x| x[0].clone());
    let mut gates = Vec::new();
    for slot in engine["t"]["slots"].as_array_mut().ok_or_else(|| bad("the job table"))? {
        let mut gate = json!({ "user": false, "after": [], "until": null, "throttled": false, "second": false });
        if let Some(e) = slot.as_object_mut() {
            let id = e["spec"]["id"].to_string();
            let queued = matches!(e["state"].as_str(), Some("Pending" | "Held"));
            let meta = metas.get(&id).cloned().unwrap_or(json!({}));
            let array = &meta["array"];
            let spec = e.get_mut("spec").and_then(Value::as_object_mut).ok_or_else(|| bad("a job's spec"))?;
            spec.insert("begin".into(), Value::Null);
            spec.insert("singleton".into(), Value::Null);
            let throttle = match array.get(0).and_then(|a| limit_of(a).map(|l| (a.clone(), l))) {
                Some((a, l)) => json!({ "array": a, "limit": l }),
                None => Value::Null,
            };
            spec.insert("throttle".into(), throttle);
            if queued {
                let after: Result<Vec<Value>, String> = meta["waits"].as_array().cloned().unwrap_or_default().iter().map(|w| Ok(json!({ "kind": kind(&w[0])?, "job": w[1], "delay": 0 }))).collect();
                gate = json!({ "user": meta["hold"], "after": after?, "until": null, "throttled": meta["throttled"], "second": false });
            }
        }
        gates.push(gate);
    }
    let live = |id: &Value| slot_of.get(&id.to_string()).map(|s| json!([s, id]));
    let mut deps = serde_json::Map::new();
    for (p, ds) in dependents.as_object().cloned().unwrap_or_default() {
        let waiting: Vec<Value> = ds.as_array().cloned().unwrap_or_default().iter().filter_map(live).collect();
        if slot_of.contains_key(&p) && !waiting.is_empty() {
            deps.insert(p, Value::Array(waiting));
        }
    }
    let mut arr = serde_json::Map::new();
    for (a, x) in arrays.as_object().cloned().unwrap_or_default() {
        let waiting: Vec<Value> = x[1].as_array().cloned().unwrap_or_default().iter().filter_map(live).collect();
        arr.insert(a, json!({ "limit": x[0], "through": x[2], "waiting": waiting }));
    }
    engine["gates"] = json!({ "slots": gates, "dependents": deps, "arrays": arr, "singletons": {}, "timers": [], "ended": [], "ended_at": 0 });
    Ok(v)
}

/// Format 1 → 2 (see [`UPGRADES`]).
fn upgrade_1_to_2(what: Stored, mut v: Value) -> Result<Value, String> {
    if what == Stored::Events {
        return Ok(v); // events are unchanged
    }
    let bad = |what: &str| format!("a format-1 snapshot without {what}");
    let wake = v["engine"]["wake"].clone();
    v["wake"] = wake;
    for m in v["jobs"].as_object_mut().ok_or_else(|| bad("jobs"))?.values_mut() {
        m["limit_hit"] = Value::Bool(false);
    }
    let engine = &mut v["engine"];
    // each live slot's own node-set request, taken from the spec's index
    let mut own_of: Vec<Option<u64>> = Vec::new();
    for slot in engine["t"]["slots"].as_array_mut().ok_or_else(|| bad("the job table"))? {
        let own = match slot.get_mut("spec").and_then(|s| s.as_object_mut()) {
            Some(spec) => spec.remove("nodeset").and_then(|n| n.as_u64()),
            None => None, // a free slot
        };
        own_of.push(own);
    }
    let live: Vec<bool> = engine["t"]["slots"].as_array().map_or(Vec::new(), |s| s.iter().map(|x| !x.is_null()).collect());
    if let Some(m) = engine["m"].get_mut("Nodes") {
        let requests = m["board"].as_object_mut().and_then(|b| b.remove("requests")).unwrap_or(Value::Array(Vec::new()));
        let demands = m["demand"].as_array().cloned().unwrap_or_default();
        let mut own = Vec::with_capacity(demands.len());
        let mut users = vec![0u64; m["board"]["sets"].as_array().map_or(0, |s| s.len())];
        for (i, d) in demands.iter().enumerate() {
            let is_live = live.get(i).copied().unwrap_or(false);
            let request = own_of.get(i).copied().flatten().filter(|_| is_live);
            own.push(match request {
                Some(k) => requests.get(k as usize).cloned().ok_or_else(|| bad(&format!("node-set request {k}")))?,
                None => Value::Null,
            });
            if let (true, Some(k)) = (is_live, d["sets"].as_u64()) {
                *users.get_mut(k as usize).ok_or_else(|| bad(&format!("set list {k}")))? += 1;
            }
        }
        // a dead slot's demand names no set list
        if let Some(ds) = m["demand"].as_array_mut() {
            for (i, d) in ds.iter_mut().enumerate() {
                if !live.get(i).copied().unwrap_or(false) {
                    d["sets"] = Value::Null;
                }
            }
        }
        let own_sets = own.iter().filter(|o| !o.is_null()).count();
        m["own"] = Value::Array(own);
        m["own_sets"] = own_sets.into();
        if let Some(sets) = m["board"]["sets"].as_array_mut() {
            for (l, u) in sets.iter_mut().zip(users) {
                l["users"] = u.into();
            }
        }
    }
    Ok(v)
}

/// The state format this build writes (see [`UPGRADES`]).
pub const STATE_FORMAT: i64 = UPGRADES.len() as i64;

/// A state format as the messages name it.
pub fn format_name(format: i64) -> String {
    match format {
        0 => "state format 0 (Tessera before versioned state)".to_string(),
        f if f > STATE_FORMAT => format!("state format {f} (a newer Tessera than this one)"),
        f => format!("state format {f}"),
    }
}

/// The JSON of a row of state format `format` (`text`), upgraded to this
/// build's format. `Err(None)`: a format this build does not know (a newer
/// one); `Err(Some(why))`: an upgrade refused it.
pub fn upgrade(what: Stored, format: i64, text: &str) -> Result<Value, Option<String>> {
    if !(0..=STATE_FORMAT).contains(&format) {
        return Err(None);
    }
    let mut v: Value = serde_json::from_str(text).map_err(|e| Some(format!("not JSON: {e}")))?;
    for up in &UPGRADES[format as usize..] {
        v = up(what, v).map_err(Some)?;
    }
    Ok(v)
}

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
    #[error("state database {path}: {}", refusal(*what, *seq, *found, why.as_deref()))]
    Format {
        path: PathBuf,
        what: Stored,
        seq: i64,
        found: i64,
        /// Why the upgrade refused it; None: a format this build does not know.
        why: Option<String>,
    },
}

/// Why a row of state format `found` is not read, and what to do.
fn refusal(what: Stored, seq: i64, found: i64, why: Option<&str>) -> String {
    let head = format!("{} was written in {}; this build writes state format {STATE_FORMAT}", what.describe(seq), format_name(found));
    match why {
        Some(why) => format!("{head} and does not upgrade format {found}: {why}. Run a Tessera that reads format {found}, or give this one another --state-dir"),
        None => format!("{head} and reads formats 0 to {STATE_FORMAT}. Run the Tessera that wrote it (or a newer one), or give this one another --state-dir"),
    }
}

impl Stored {
    fn describe(self, seq: i64) -> String {
        match self {
            Stored::Snapshot => format!("the snapshot (as of entry {seq})"),
            Stored::Events => format!("journal entry {seq}"),
        }
    }
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
        self.conn
            .prepare_cached("INSERT INTO journal (seq, now, events, format) VALUES (?1, ?2, ?3, ?4)")
            .map_err(self.err())?
            .execute(params![seq, now, text, STATE_FORMAT])
            .map_err(self.err())?;
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
        tx.execute("INSERT OR REPLACE INTO snapshot (id, seq, state, format) VALUES (1, ?1, ?2, ?3)", params![seq, text, STATE_FORMAT]).map_err(e)?;
        tx.execute("DELETE FROM journal WHERE seq <= ?1", params![seq]).map_err(e)?;
        tx.commit().map_err(e)?;
        self.since_snapshot = 0;
        Ok(())
    }

    /// The snapshot and the journal after it, each row upgraded from its state
    /// format (or refused: [`JournalError::Format`]).
    pub fn recover(&self) -> Result<Recovered, JournalError> {
        let snap: Option<(i64, String, i64)> =
            self.conn.query_row("SELECT seq, state, format FROM snapshot WHERE id = 1", [], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?))).optional().map_err(self.err())?;
        let snapshot = match snap {
            Some((seq, text, format)) => Some((seq, self.decode(Stored::Snapshot, seq, format, &text)?)),
            None => None,
        };
        let after = snapshot.as_ref().map_or(0, |(s, _)| *s);
        let mut stmt = self.conn.prepare("SELECT seq, now, events, format FROM journal WHERE seq > ?1 ORDER BY seq").map_err(self.err())?;
        let rows = stmt
            .query_map(params![after], |r| Ok((r.get::<_, i64>(0)?, r.get::<_, i64>(1)?, r.get::<_, String>(2)?, r.get::<_, i64>(3)?)))
            .map_err(self.err())?;
        let mut entries = Vec::new();
        for row in rows {
            let (seq, now, text, format) = row.map_err(self.err())?;
            entries.push((seq, now, self.decode(Stored::Events, seq, format, &text)?));
        }
        Ok(Recovered { snapshot, entries })
    }

    /// Decode row `seq` of state format `format`: directly if it is this
    /// build's, else through [`upgrade`].
    fn decode<T: DeserializeOwned>(&self, what: Stored, seq: i64, format: i64, text: &str) -> Result<T, JournalError> {
        let decoded = if format == STATE_FORMAT {
            serde_json::from_str(text)
        } else {
            let v = upgrade(what, format, text).map_err(|why| JournalError::Format { path: self.path.clone(), what, seq, found: format, why })?;
            serde_json::from_value(v)
        };
        decoded.map_err(|source| JournalError::Decode { path: self.path.clone(), seq, source })
    }
}
