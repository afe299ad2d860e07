//! The accounting store: one SQLite file (bundled SQLite), numbered migrations,
//! batched transactional writes.
//!
//! A job and its per-node allocations are written in the same transaction, and a
//! run is marked complete in the transaction that writes its last batch, so a crash
//! (or `kill -9`) at any point leaves whole jobs only, and readers can tell a run
//! that was cut short. Schema: `migrations/*.sql`; `PRAGMA user_version` is the
//! schema version.

mod records;

pub use records::{AllocationRecord, JobRecord, JobStateTag, NodeRecord, PowerRow, RunInfo, RunKind, StepRecord};

use rusqlite::{params, Connection, OptionalExtension};
use std::path::Path;

/// Numbered migrations, applied in order; the index + 1 is the schema version.
const MIGRATIONS: &[&str] = &[
    include_str!("../../migrations/001_init.sql"),
    include_str!("../../migrations/002_live.sql"),
    include_str!("../../migrations/003_suspended.sql"),
    include_str!("../../migrations/004_power.sql"),
    include_str!("../../migrations/005_ending.sql"),
    include_str!("../../migrations/006_released.sql"),
    include_str!("../../migrations/007_steps.sql"),
    include_str!("../../migrations/008_imported.sql"),
];

/// The schema version this build writes.
pub const SCHEMA_VERSION: i64 = MIGRATIONS.len() as i64;

/// Jobs per transaction when recording a run.
pub const BATCH: usize = 5_000;

#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("accounting store {path}: {source}")]
    Sqlite {
        path: String,
        #[source]
        source: rusqlite::Error,
    },
    #[error("accounting store {path} has schema version {found}; this build knows up to {known}")]
    TooNew { path: String, found: i64, known: i64 },
    #[error("accounting store {path} has no run {run}")]
    NoRun { path: String, run: i64 },
    #[error("accounting store {path} holds no complete run")]
    Empty { path: String },
    #[error("accounting store {path}, run {run}: {what}; the store was not written by this build or was edited (reports refuse an inconsistent run rather than guess)")]
    Inconsistent { path: String, run: i64, what: String },
}

/// The widest time (s) a consistent store holds, relative to its run's epoch
/// and as an epoch: twice the engine's clock, so a live run's Unix times fit.
pub const MAX_STORED_TIME: i64 = 2 * tessera_core::MAX_TIME;

/// A run as `tessera acct runs` lists it.
#[derive(Clone, Debug, PartialEq)]
pub struct RunSummary {
    pub id: i64,
    pub kind: String,
    pub label: String,
    pub policy: String,
    pub complete: bool,
    /// Unix time its recording began.
    pub recorded_at: i64,
    pub jobs: i64,
}

pub struct Store {
    conn: Connection,
    path: String,
}

impl Store {
    /// Open (creating if needed) and migrate a store.
    pub fn open(path: &Path) -> Result<Store, StoreError> {
        let p = path.display().to_string();
        let conn = Connection::open(path).map_err(|source| StoreError::Sqlite { path: p.clone(), source })?;
        let mut s = Store { conn, path: p };
        s.setup()?;
        Ok(s)
    }

    /// A store in memory (tests).
    pub fn in_memory() -> Result<Store, StoreError> {
        let conn = Connection::open_in_memory().map_err(|source| StoreError::Sqlite { path: ":memory:".into(), source })?;
        let mut s = Store { conn, path: ":memory:".into() };
        s.setup()?;
        Ok(s)
    }

    fn err(&self) -> impl Fn(rusqlite::Error) -> StoreError + '_ {
        move |source| StoreError::Sqlite { path: self.path.clone(), source }
    }

    fn setup(&mut self) -> Result<(), StoreError> {
        let path = self.path.clone();
        let e = |source| StoreError::Sqlite { path: path.clone(), source };
        self.conn.pragma_update(None, "journal_mode", "WAL").map_err(e)?;
        self.conn.pragma_update(None, "synchronous", "NORMAL").map_err(e)?;
        let version: i64 = self.conn.pragma_query_value(None, "user_version", |r| r.get(0)).map_err(e)?;
        if version > SCHEMA_VERSION {
            return Err(StoreError::TooNew { path, found: version, known: SCHEMA_VERSION });
        }
        // SQLite's procedure for rebuilding a table: foreign keys off during the
        // migration, checked before it commits
        self.conn.pragma_update(None, "foreign_keys", "OFF").map_err(e)?;
        for (i, sql) in MIGRATIONS.iter().enumerate().skip(version as usize) {
            let tx = self.conn.transaction().map_err(e)?;
            tx.execute_batch(sql).map_err(e)?;
            let broken: i64 = tx.query_row("SELECT count(*) FROM pragma_foreign_key_check", [], |r| r.get(0)).map_err(e)?;
            if broken > 0 {
                return Err(StoreError::Sqlite { path, source: rusqlite::Error::SqliteFailure(rusqlite::ffi::Error::new(787), Some(format!("migration {} would leave {broken} broken references", i + 1))) });
            }
            tx.pragma_update(None, "user_version", i as i64 + 1).map_err(e)?;
            tx.commit().map_err(e)?;
        }
        self.conn.pragma_update(None, "foreign_keys", "ON").map_err(e)?;
        Ok(())
    }

    pub fn schema_version(&self) -> Result<i64, StoreError> {
        self.conn.pragma_query_value(None, "user_version", |r| r.get(0)).map_err(self.err())
    }

    pub fn connection(&self) -> &Connection {
        &self.conn
    }

    pub fn path(&self) -> &str {
        &self.path
    }

    /// Record a run: its nodes, then its jobs in batches of [`BATCH`], each batch one
    /// transaction; the last one also marks the run complete. Returns the run id.
    pub fn record_run<I>(&mut self, run: &RunInfo, nodes: &[NodeRecord], jobs: I) -> Result<i64, StoreError>
    where
        I: IntoIterator<Item = JobRecord>,
    {
        self.record_run_with_power(run, nodes, &[], jobs)
    }

    /// [`Store::record_run`] for a power-budgeted run: its power over time is
    /// written with its nodes, before its jobs.
    pub fn record_run_with_power<I>(&mut self, run: &RunInfo, nodes: &[NodeRecord], power: &[PowerRow], jobs: I) -> Result<i64, StoreError>
    where
        I: IntoIterator<Item = JobRecord>,
    {
        let path = self.path.clone();
        let e = |source| StoreError::Sqlite { path: path.clone(), source };
        let tx = self.conn.transaction().map_err(e)?;
        tx.execute(
            "INSERT INTO runs (kind, label, site, cluster, policy, epoch_offset, recorded_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
            params![run.kind.as_str(), run.label, run.site, run.cluster, run.policy, run.epoch_offset, run.recorded_at],
        )
        .map_err(e)?;
        let run_id = tx.last_insert_rowid();
        {
            let mut ins = tx
                .prepare(
                    "INSERT INTO nodes (run_id, node_id, name, node_type, partition, cores, memory_mb, gpus, hs06_per_core, factor, unit_cores, unit_memory_mb, unit_gpus) \
                     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13)",
                )
                .map_err(e)?;
            let mut cap = tx
                .prepare("INSERT INTO node_capacity (run_id, node_id, valid_from, valid_to, cores, memory_mb, gpus) VALUES (?1, ?2, ?3, NULL, ?4, ?5, ?6)")
                .map_err(e)?;
            for (i, n) in nodes.iter().enumerate() {
                ins.execute(params![
                    run_id, i as i64, n.name, n.node_type, n.partition, n.cores, n.memory_mb as i64, n.gpus, n.hs06_per_core, n.factor,
                    n.unit.cores, n.unit.memory_mb as i64, n.unit.gpus
                ])
                .map_err(e)?;
                cap.execute(params![run_id, i as i64, n.valid_from, n.cores, n.memory_mb as i64, n.gpus]).map_err(e)?;
            }
            let mut pw = tx
                .prepare("INSERT INTO power_samples (run_id, time, power_w, budget_w, busy_nodes, cap_mean_w, cap_min_w, cap_max_w) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)")
                .map_err(e)?;
            for p in power {
                pw.execute(params![run_id, p.time, p.power_w, p.budget_w, p.busy_nodes, p.cap_mean_w, p.cap_min_w, p.cap_max_w]).map_err(e)?;
            }
        }
        tx.commit().map_err(e)?;
        let mut batch: Vec<JobRecord> = Vec::with_capacity(BATCH);
        let mut jobs = jobs.into_iter().peekable();
        while jobs.peek().is_some() {
            batch.clear();
            batch.extend(jobs.by_ref().take(BATCH));
            let last = jobs.peek().is_none();
            let tx = self.conn.transaction().map_err(e)?;
            write_jobs(&tx, run_id, nodes, &batch).map_err(e)?;
            if last {
                tx.execute("UPDATE runs SET complete = 1 WHERE id = ?1", params![run_id]).map_err(e)?;
            }
            tx.commit().map_err(e)?;
        }
        // a run without jobs is complete at once
        self.conn.execute("UPDATE runs SET complete = 1 WHERE id = ?1 AND NOT EXISTS (SELECT 1 FROM jobs WHERE run_id = ?1)", params![run_id]).map_err(e)?;
        Ok(run_id)
    }

    /// A run's power over time (empty unless it ran under a power budget).
    pub fn power(&self, run_id: i64) -> Result<Vec<PowerRow>, StoreError> {
        let mut q = self
            .conn
            .prepare("SELECT time, power_w, budget_w, busy_nodes, cap_mean_w, cap_min_w, cap_max_w FROM power_samples WHERE run_id = ?1 ORDER BY time, rowid")
            .map_err(self.err())?;
        let rows = q
            .query_map(params![run_id], |r| {
                Ok(PowerRow { time: r.get(0)?, power_w: r.get(1)?, budget_w: r.get(2)?, busy_nodes: r.get(3)?, cap_mean_w: r.get(4)?, cap_min_w: r.get(5)?, cap_max_w: r.get(6)? })
            })
            .map_err(self.err())?;
        rows.collect::<Result<_, _>>().map_err(self.err())
    }

    /// The live run named `label` (a controller's state directory), created with
    /// its nodes on first use. A live run is complete at every instant: each job
    /// is written whole, when it ends ([`Store::append_jobs`]).
    pub fn live_run(&mut self, run: &RunInfo, nodes: &[NodeRecord]) -> Result<i64, StoreError> {
        let found: Option<i64> = self
            .conn
            .query_row("SELECT id FROM runs WHERE kind = 'live' AND label = ?1 ORDER BY id DESC LIMIT 1", params![run.label], |r| r.get(0))
            .optional()
            .map_err(self.err())?;
        if let Some(id) = found {
            return Ok(id);
        }
        let id = self.record_run(run, nodes, std::iter::empty())?;
        Ok(id)
    }

    /// A live run's nodes after its cluster changed at `at` (a reconfigure):
    /// a node keeps its id as long as it keeps its name (its row takes its new
    /// type, partition, capacity and factor; a change of capacity closes its
    /// `node_capacity` row and opens one from `at`), a new node takes the next
    /// id, and a removed node's capacity ends at `at`. Returns the id of each of
    /// `nodes`, and every node of the run by id (what [`Store::append_jobs`]
    /// takes, with allocations naming nodes by id).
    pub fn live_nodes(&mut self, run_id: i64, nodes: &[NodeRecord], at: i64) -> Result<(Vec<u32>, Vec<NodeRecord>), StoreError> {
        let path = self.path.clone();
        let e = |source| StoreError::Sqlite { path: path.clone(), source };
        let tx = self.conn.transaction().map_err(e)?;
        // name -> (id, cores, memory, GPUs, whether a capacity row is open)
        let known: std::collections::BTreeMap<String, (u32, i64, i64, i64, bool)> = {
            let mut q = tx
                .prepare(
                    "SELECT name, node_id, cores, memory_mb, gpus, EXISTS (SELECT 1 FROM node_capacity c WHERE c.run_id = n.run_id AND c.node_id = n.node_id AND c.valid_to IS NULL) \
                     FROM nodes n WHERE run_id = ?1",
                )
                .map_err(e)?;
            let rows = q.query_map(params![run_id], |r| Ok((r.get::<_, String>(0)?, (r.get::<_, u32>(1)?, r.get(2)?, r.get(3)?, r.get(4)?, r.get(5)?)))).map_err(e)?;
            rows.collect::<Result<_, _>>().map_err(e)?
        };
        let mut next = known.len() as u32;
        let mut ids = Vec::with_capacity(nodes.len());
        let mut kept = std::collections::BTreeSet::new();
        for n in nodes {
            let capacity = (n.cores as i64, n.memory_mb as i64, n.gpus as i64);
            let (id, open) = match known.get(&n.name) {
                Some(&(id, c, m, g, open)) => {
                    kept.insert(id);
                    tx.execute(
                        "UPDATE nodes SET node_type = ?3, partition = ?4, cores = ?5, memory_mb = ?6, gpus = ?7, hs06_per_core = ?8, factor = ?9, unit_cores = ?10, unit_memory_mb = ?11, unit_gpus = ?12 \
                         WHERE run_id = ?1 AND node_id = ?2",
                        params![run_id, id, n.node_type, n.partition, n.cores, n.memory_mb as i64, n.gpus, n.hs06_per_core, n.factor, n.unit.cores, n.unit.memory_mb as i64, n.unit.gpus],
                    )
                    .map_err(e)?;
                    (id, !open || (c, m, g) != capacity)
                }
                None => {
                    let id = next;
                    next += 1;
                    tx.execute(
                        "INSERT INTO nodes (run_id, node_id, name, node_type, partition, cores, memory_mb, gpus, hs06_per_core, factor, unit_cores, unit_memory_mb, unit_gpus) \
                         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13)",
                        params![run_id, id, n.name, n.node_type, n.partition, n.cores, n.memory_mb as i64, n.gpus, n.hs06_per_core, n.factor, n.unit.cores, n.unit.memory_mb as i64, n.unit.gpus],
                    )
                    .map_err(e)?;
                    (id, true)
                }
            };
            if open {
                tx.execute("UPDATE node_capacity SET valid_to = ?3 WHERE run_id = ?1 AND node_id = ?2 AND valid_to IS NULL", params![run_id, id, at]).map_err(e)?;
                tx.execute(
                    "INSERT INTO node_capacity (run_id, node_id, valid_from, valid_to, cores, memory_mb, gpus) VALUES (?1, ?2, ?3, NULL, ?4, ?5, ?6)",
                    params![run_id, id, at, capacity.0, capacity.1, capacity.2],
                )
                .map_err(e)?;
            }
            ids.push(id);
        }
        for (id, ..) in known.values().filter(|k| !kept.contains(&k.0)) {
            tx.execute("UPDATE node_capacity SET valid_to = ?3 WHERE run_id = ?1 AND node_id = ?2 AND valid_to IS NULL", params![run_id, id, at]).map_err(e)?;
        }
        let all = {
            let mut q = tx
                .prepare("SELECT name, node_type, partition, cores, memory_mb, gpus, hs06_per_core, factor, unit_cores, unit_memory_mb, unit_gpus FROM nodes WHERE run_id = ?1 ORDER BY node_id")
                .map_err(e)?;
            let rows = q
                .query_map(params![run_id], |r| {
                    Ok(NodeRecord {
                        name: r.get(0)?,
                        node_type: r.get(1)?,
                        partition: r.get(2)?,
                        cores: r.get(3)?,
                        memory_mb: r.get::<_, i64>(4)? as u64,
                        gpus: r.get(5)?,
                        hs06_per_core: r.get(6)?,
                        factor: r.get(7)?,
                        unit: tessera_core::CanonicalUnit { cores: r.get(8)?, memory_mb: r.get::<_, i64>(9)? as u64, gpus: r.get(10)? },
                        valid_from: 0,
                    })
                })
                .map_err(e)?;
            rows.collect::<Result<Vec<_>, _>>().map_err(e)?
        };
        tx.commit().map_err(e)?;
        Ok((ids, all))
    }

    /// Append finished jobs to a live run in one transaction, skipping any job id
    /// the run already holds (a controller replaying its journal after a crash
    /// meets the jobs it recorded before). Returns how many were written.
    pub fn append_jobs(&mut self, run_id: i64, nodes: &[NodeRecord], jobs: &[JobRecord]) -> Result<usize, StoreError> {
        let path = self.path.clone();
        let e = |source| StoreError::Sqlite { path: path.clone(), source };
        let tx = self.conn.transaction().map_err(e)?;
        let mut fresh = Vec::with_capacity(jobs.len());
        {
            let mut seen = tx.prepare_cached("SELECT 1 FROM jobs WHERE run_id = ?1 AND job_id = ?2").map_err(e)?;
            for j in jobs {
                if !seen.exists(params![run_id, j.job_id]).map_err(e)? {
                    fresh.push(j.clone());
                }
            }
        }
        write_jobs(&tx, run_id, nodes, &fresh).map_err(e)?;
        tx.commit().map_err(e)?;
        Ok(fresh.len())
    }

    /// Make every record written so far durable. Writes are committed with
    /// `synchronous = NORMAL` (durable against a crash of the process, not of
    /// the machine, until a checkpoint); a checkpoint syncs the log and copies
    /// it into the database. A live controller calls this before it snapshots
    /// its state, so that no record is left behind the snapshot's journal.
    pub fn checkpoint(&self) -> Result<(), StoreError> {
        self.conn.query_row("PRAGMA wal_checkpoint(PASSIVE)", [], |_| Ok(())).map_err(self.err())
    }

    /// The newest complete run, or `run` if given (and present), checked for
    /// consistency ([`Store::check_run`]) so that every report can index by it.
    pub fn resolve_run(&self, run: Option<i64>) -> Result<i64, StoreError> {
        let run = self.find_run(run)?;
        self.check_run(run)?;
        Ok(run)
    }

    /// What every reader relies on, checked once: the run's nodes are numbered
    /// 0..n, every allocation names one of them and a job of the run, counts are
    /// not negative, intervals do not run backwards, factors are positive, and
    /// times (with the run's epoch) lie within ±[`MAX_STORED_TIME`].
    pub fn check_run(&self, run: i64) -> Result<(), StoreError> {
        let bad = |what: String| StoreError::Inconsistent { path: self.path.clone(), run, what };
        let c = &self.conn;
        let (count, min, max): (i64, Option<i64>, Option<i64>) =
            c.query_row("SELECT COUNT(*), MIN(node_id), MAX(node_id) FROM nodes WHERE run_id = ?1", params![run], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?))).map_err(self.err())?;
        if count > 0 && (min != Some(0) || max != Some(count - 1)) {
            return Err(bad(format!("its {count} nodes are numbered {} to {}, expected 0 to {}", min.unwrap_or(0), max.unwrap_or(0), count - 1)));
        }
        let offset: i64 = c.query_row("SELECT epoch_offset FROM runs WHERE id = ?1", params![run], |r| r.get(0)).map_err(self.err())?;
        if offset.abs() > MAX_STORED_TIME {
            return Err(bad(format!("its epoch is {offset} s, expected within ±{MAX_STORED_TIME} s")));
        }
        // (query, what an offending row means); each query yields one i64 and one text
        let t = MAX_STORED_TIME;
        let checks: [(String, &str); 6] = [
            (
                "SELECT a.job, 'node ' || a.node_id FROM allocations a WHERE a.run_id = ?1 AND NOT EXISTS (SELECT 1 FROM nodes n WHERE n.run_id = a.run_id AND n.node_id = a.node_id) LIMIT 1".into(),
                "an allocation of job record {0} names {1}, which the run does not have",
            ),
            (
                "SELECT a.job, 'job record ' || a.job FROM allocations a WHERE a.run_id = ?1 AND NOT EXISTS (SELECT 1 FROM jobs j WHERE j.id = a.job AND j.run_id = a.run_id) LIMIT 1".into(),
                "an allocation names {1}, which the run does not have",
            ),
            (
                "SELECT a.job, a.cores || ' cores, ' || a.memory_mb || ' MB, ' || a.gpus || ' GPUs from ' || a.start_time || ' to ' || a.end_time FROM allocations a \
                 WHERE a.run_id = ?1 AND (a.cores < 0 OR a.memory_mb < 0 OR a.gpus < 0 OR a.end_time < a.start_time) LIMIT 1".into(),
                "an allocation of job record {0} holds {1}: expected counts of at least 0 and an end not before its start",
            ),
            (
                "SELECT node_id, name || ': ' || cores || ' cores, ' || memory_mb || ' MB, ' || gpus || ' GPUs, factor ' || factor || ', unit ' || unit_cores || '/' || unit_memory_mb || '/' || unit_gpus \
                 FROM nodes WHERE run_id = ?1 AND (cores < 0 OR memory_mb < 0 OR gpus < 0 OR NOT factor > 0 OR unit_cores < 0 OR unit_memory_mb < 0 OR unit_gpus < 0) LIMIT 1".into(),
                "node {0} is {1}: expected counts of at least 0 and a factor above 0",
            ),
            (
                format!("SELECT job_id, 'submit ' || submit_time || ', start ' || start_time || ', end ' || end_time FROM jobs WHERE run_id = ?1 AND \
                 (ABS(submit_time + ?2) > {t} OR ABS(start_time + ?2) > {t} OR ABS(end_time + ?2) > {t} OR ABS(submit_time) > {t} OR ABS(end_time) > {t}) LIMIT 1"),
                "job {0} has {1} (epoch {2}): expected times within ±2^43 s",
            ),
            (
                "SELECT job_id, req_procs || ' requested, ' || alloc_cores || ' cores on ' || alloc_nodes || ' nodes, ' || req_mem_mb || ' MB, limit ' || time_limit || ' s, factor ' || factor \
                 FROM jobs WHERE run_id = ?1 AND (alloc_cores < 0 OR alloc_nodes < 0 OR req_mem_mb < 0 OR NOT factor > 0) LIMIT 1".into(),
                "job {0} has {1}: expected counts of at least 0 and a factor above 0",
            ),
        ];
        for (i, (sql, what)) in checks.iter().enumerate() {
            let row: Option<(i64, String)> = if i == 4 {
                c.query_row(sql, params![run, offset], |r| Ok((r.get(0)?, r.get(1)?)))
            } else {
                c.query_row(sql, params![run], |r| Ok((r.get(0)?, r.get(1)?)))
            }
            .optional()
            .map_err(self.err())?;
            if let Some((id, text)) = row {
                return Err(bad(what.replace("{0}", &id.to_string()).replace("{1}", &text).replace("{2}", &offset.to_string())));
            }
        }
        Ok(())
    }

    /// Every run the store holds, oldest first, with its job count.
    pub fn runs(&self) -> Result<Vec<RunSummary>, StoreError> {
        let mut q = self
            .conn
            .prepare("SELECT r.id, r.kind, r.label, r.policy, r.complete, r.recorded_at, (SELECT COUNT(*) FROM jobs j WHERE j.run_id = r.id) FROM runs r ORDER BY r.id")
            .map_err(self.err())?;
        let rows = q
            .query_map([], |r| {
                Ok(RunSummary { id: r.get(0)?, kind: r.get(1)?, label: r.get(2)?, policy: r.get(3)?, complete: r.get(4)?, recorded_at: r.get(5)?, jobs: r.get(6)? })
            })
            .map_err(self.err())?;
        rows.collect::<Result<_, _>>().map_err(self.err())
    }

    /// Remove runs and everything recorded under them, in one transaction, then
    /// give the space back to the file system (VACUUM).
    pub fn remove_runs(&mut self, ids: &[i64]) -> Result<(), StoreError> {
        let path = self.path.clone();
        let e = |source| StoreError::Sqlite { path: path.clone(), source };
        let tx = self.conn.transaction().map_err(e)?;
        for id in ids {
            for table in ["allocations", "released", "steps", "power_samples", "node_capacity", "jobs", "nodes"] {
                tx.execute(&format!("DELETE FROM {table} WHERE run_id = ?1"), params![id]).map_err(e)?;
            }
            tx.execute("DELETE FROM runs WHERE id = ?1", params![id]).map_err(e)?;
        }
        tx.commit().map_err(e)?;
        // in WAL mode the file shrinks only once the log is checkpointed
        self.conn.execute_batch("VACUUM").map_err(e)?;
        self.conn.query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |_| Ok(())).map_err(e)
    }

    fn find_run(&self, run: Option<i64>) -> Result<i64, StoreError> {
        match run {
            Some(r) => {
                let found: Option<i64> = self.conn.query_row("SELECT id FROM runs WHERE id = ?1", params![r], |x| x.get(0)).optional().map_err(self.err())?;
                found.ok_or(StoreError::NoRun { path: self.path.clone(), run: r })
            }
            None => {
                let found: Option<i64> = self
                    .conn
                    .query_row("SELECT id FROM runs WHERE complete = 1 ORDER BY id DESC LIMIT 1", [], |x| x.get(0))
                    .optional()
                    .map_err(self.err())?;
                found.ok_or(StoreError::Empty { path: self.path.clone() })
            }
        }
    }
}

fn write_jobs(tx: &rusqlite::Transaction<'_>, run_id: i64, nodes: &[NodeRecord], jobs: &[JobRecord]) -> rusqlite::Result<()> {
    let mut job = tx.prepare_cached(
        "INSERT INTO jobs (run_id, job_id, name, user, grp, account, partition, submit_time, start_time, end_time, state, exit_code, req_procs, req_mem_mb, time_limit, \
         alloc_cores, alloc_nodes, factor, wall_raw_s, wall_norm_s, cpu_raw_s, cpu_norm_s, core_hours, norm_core_hours, hs06_hours, hs06_per_core, energy_j, suspended_s, \
         signal, reason, array_job, array_task, max_rss_kb) \
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18, ?19, ?20, ?21, ?22, ?23, ?24, ?25, ?26, ?27, ?28, ?29, ?30, ?31, ?32, ?33)",
    )?;
    let mut alloc = tx.prepare_cached("INSERT INTO allocations (job, run_id, node_id, cores, memory_mb, gpus, start_time, end_time) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)")?;
    let mut released = tx.prepare_cached("INSERT INTO released (job, run_id, start_time, end_time) VALUES (?1, ?2, ?3, ?4)")?;
    let mut step = tx.prepare_cached(
        "INSERT INTO steps (job, run_id, step, name, node_list, ntasks, start_time, end_time, state, exit_code, signal, cpu_s, max_rss_kb) \
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13)",
    )?;
    for j in jobs {
        let u = j.usage(nodes);
        job.execute(params![
            run_id, j.job_id, j.name, j.user, j.group, j.account, j.partition, j.submit, j.start, j.end, j.state.as_str(), j.exit_code,
            j.req_procs, j.req_mem_mb as i64, j.time_limit, u.alloc_cores, j.allocations.len() as i64, j.factor, u.wall_raw_s, u.wall_norm_s,
            u.cpu_raw_s, u.cpu_norm_s, u.core_hours, u.norm_core_hours, u.hs06_hours, u.hs06_per_core, j.energy_j, j.suspended_s,
            j.signal, j.reason, j.array.map(|a| a.0), j.array.map(|a| a.1), j.max_rss_kb.map(|k| k as i64)
        ])?;
        let id = tx.last_insert_rowid();
        for a in &j.allocations {
            alloc.execute(params![id, run_id, a.node, a.cores, a.memory_mb as i64, a.gpus, j.start, j.end])?;
        }
        for &(from, to) in &j.released {
            released.execute(params![id, run_id, from, to])?;
        }
        for s in &j.steps {
            step.execute(params![id, run_id, s.step, s.name, s.node_list, s.ntasks, s.start, s.end.max(s.start), s.state.as_str(), s.exit_code, s.signal, s.cpu_s, s.max_rss_kb.map(|k| k as i64)])?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A node of `cores` cores and `memory_mb` MB (type `t`, partition `p`,
    /// 10 HS06 per core, factor 1).
    fn node(name: &str, cores: u32, memory_mb: u64) -> NodeRecord {
        NodeRecord {
            name: name.into(),
            node_type: "t".into(),
            partition: "p".into(),
            cores,
            memory_mb,
            gpus: 0,
            hs06_per_core: Some(10.0),
            factor: 1.0,
            unit: tessera_core::CanonicalUnit::CPU,
            valid_from: 0,
        }
    }

    fn job(job_id: i64, start: i64, end: i64, allocations: Vec<AllocationRecord>) -> JobRecord {
        JobRecord::completed(job_id, 0, start, end, allocations)
    }

    fn run(kind: RunKind, label: &str) -> RunInfo {
        RunInfo { kind, label: label.into(), site: "s".into(), cluster: "c".into(), policy: "easy".into(), epoch_offset: 0, recorded_at: 0 }
    }

    /// Schema 8: a run imported from another scheduler's history is of its
    /// own kind, beside simulations and live runs of the same store.
    #[test]
    fn an_imported_run_is_recorded_as_such() {
        let mut s = Store::in_memory().unwrap();
        let nodes = vec![node("n1", 4, 0)];
        s.record_run(&run(RunKind::Simulation, "t"), &nodes, vec![JobRecord::completed(1, 0, 0, 10, vec![AllocationRecord { node: 0, cores: 1, memory_mb: 0, gpus: 0 }])]).unwrap();
        s.record_run(&run(RunKind::Imported, "sacct.txt"), &nodes, vec![JobRecord::completed(1, 0, 5, 10, vec![AllocationRecord { node: 0, cores: 4, memory_mb: 0, gpus: 0 }])]).unwrap();
        let kinds: Vec<(String, i64)> = s.runs().unwrap().into_iter().map(|r| (r.kind, r.jobs)).collect();
        assert_eq!(kinds, vec![("simulation".to_string(), 1), ("imported".to_string(), 1)]);
    }

    #[test]
    fn a_schema_1_store_keeps_its_jobs_and_allocations_and_then_takes_live_records_once() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("old.db");
        {
            let c = Connection::open(&path).unwrap();
            c.execute_batch(MIGRATIONS[0]).unwrap();
            c.pragma_update(None, "user_version", 1).unwrap();
            c.execute_batch(
                "INSERT INTO runs (id, kind, label, site, cluster, policy, recorded_at, complete) VALUES (1, 'simulation', 't', 's', 'c', 'easy', 0, 1);
                 INSERT INTO nodes (run_id, node_id, name, node_type, partition, cores, memory_mb, gpus, factor, unit_cores, unit_memory_mb, unit_gpus) VALUES (1, 0, 'n1', 't', 'p', 4, 0, 0, 1.0, 1, 0, 0);
                 INSERT INTO jobs (id, run_id, job_id, name, user, grp, account, partition, submit_time, start_time, end_time, state, exit_code, req_procs, req_mem_mb, time_limit, alloc_cores, alloc_nodes, factor, wall_raw_s, wall_norm_s, cpu_raw_s, cpu_norm_s, core_hours, norm_core_hours)
                   VALUES (7, 1, 1, 'j', 'u', 'g', 'a', 'p', 0, 0, 10, 'COMPLETED', 0, 1, 0, 10, 1, 1, 1.0, 10, 10.0, 10.0, 10.0, 0.1, 0.1);
                 INSERT INTO allocations (job, run_id, node_id, cores, memory_mb, gpus, start_time, end_time) VALUES (7, 1, 0, 1, 0, 0, 0, 10);",
            )
            .unwrap();
        }
        let mut s = Store::open(&path).unwrap();
        assert_eq!(s.schema_version().unwrap(), SCHEMA_VERSION);
        let kept: (i64, i64) = s.connection().query_row("SELECT count(*), (SELECT count(*) FROM allocations WHERE job = 7) FROM jobs WHERE id = 7", [], |r| Ok((r.get(0)?, r.get(1)?))).unwrap();
        assert_eq!(kept, (1, 1));
        let nodes = vec![NodeRecord { hs06_per_core: None, ..node("n1", 4, 0) }];
        let run = run(RunKind::Live, "/state");
        let live = s.live_run(&run, &nodes).unwrap();
        assert_eq!(s.live_run(&run, &nodes).unwrap(), live, "one live run per state directory");
        let job = JobRecord {
            state: JobStateTag::NodeFail,
            req_procs: 1,
            time_limit: 60,
            cpu_s: Some(2.0),
            ..job(3, 1, 5, vec![AllocationRecord { node: 0, cores: 1, memory_mb: 0, gpus: 0 }])
        };
        assert_eq!(s.append_jobs(live, &nodes, std::slice::from_ref(&job)).unwrap(), 1);
        assert_eq!(s.append_jobs(live, &nodes, std::slice::from_ref(&job)).unwrap(), 0, "a replayed record is not written twice");
        assert_eq!(s.resolve_run(None).unwrap(), live);
        // a job suspended 3 of its 9 s (2 cores) is charged the 6 it ran
        let susp = JobRecord { job_id: 4, start: 1, end: 10, suspended_s: 3, cpu_s: None, allocations: vec![AllocationRecord { node: 0, cores: 2, memory_mb: 0, gpus: 0 }], ..job };
        assert_eq!(s.append_jobs(live, &nodes, &[susp]).unwrap(), 1);
        let row: (i64, i64, f64, f64) = s
            .connection()
            .query_row("SELECT suspended_s, wall_raw_s, cpu_raw_s, core_hours FROM jobs WHERE run_id = ?1 AND job_id = 4", [live], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)))
            .unwrap();
        assert_eq!(row, (3, 6, 12.0, 12.0 / 3600.0));
        let old: i64 = s.connection().query_row("SELECT suspended_s FROM jobs WHERE id = 7", [], |r| r.get(0)).unwrap();
        assert_eq!(old, 0, "records from before schema 3 were never suspended");
    }

    /// A live run's cluster changes: nodes keep their ids by name wherever the
    /// file lists them, an added node takes the next id, a changed capacity
    /// closes one `node_capacity` row and opens another, a removed node's row
    /// ends, and the run stays consistent (ids 0..n, every allocation's node known).
    #[test]
    fn a_live_runs_nodes_keep_their_ids_by_name_across_a_changed_cluster() {
        let node = |name: &str, cores: u32| node(name, cores, 0);
        let mut s = Store::in_memory().unwrap();
        let run = run(RunKind::Live, "/state");
        let first = [node("a", 4), node("b", 4), node("c", 4)];
        let id = s.live_run(&run, &first).unwrap();
        assert_eq!(s.live_nodes(id, &first, 10).unwrap().0, [0, 1, 2], "unchanged: nothing moves");
        // c gone, b grown, d added, listed d, b, a
        let (ids, all) = s.live_nodes(id, &[node("d", 8), node("b", 8), node("a", 4)], 100).unwrap();
        assert_eq!(ids, [3, 1, 0]);
        assert_eq!(all.iter().map(|n| (n.name.as_str(), n.cores)).collect::<Vec<_>>(), [("a", 4), ("b", 8), ("c", 4), ("d", 8)]);
        let rows: Vec<(i64, i64, Option<i64>, i64)> = {
            let mut q = s.connection().prepare("SELECT node_id, valid_from, valid_to, cores FROM node_capacity WHERE run_id = ?1 ORDER BY node_id, valid_from").unwrap();
            q.query_map(params![id], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?))).unwrap().map(|r| r.unwrap()).collect()
        };
        assert_eq!(rows, [(0, 0, None, 4), (1, 0, Some(100), 4), (1, 100, None, 8), (2, 0, Some(100), 4), (3, 100, None, 8)]);
        // a job on d, as the controller writes it: allocations by id
        let job = job(1, 100, 3700, vec![AllocationRecord { node: ids[0], cores: 8, memory_mb: 0, gpus: 0 }]);
        s.append_jobs(id, &all, &[job]).unwrap();
        s.check_run(id).unwrap();
        let hs06: f64 = s.connection().query_row("SELECT hs06_hours FROM jobs WHERE run_id = ?1", params![id], |r| r.get(0)).unwrap();
        assert_eq!(hs06, 80.0, "8 cores of 10 HS06 for an hour, on d");
    }

    /// A job suspended by preemption or the gang scheduler gives its cores back
    /// and keeps its memory: the bills and the true-overhead timeline charge its
    /// cores only outside the intervals recorded in `released` (schema 6).
    #[test]
    fn a_preempted_jobs_cores_are_not_charged_while_it_held_none() {
        let node = node("n1", 4, 8192);
        let job = |id: i64, released: Vec<(i64, i64)>| JobRecord {
            suspended_s: released.iter().map(|(a, b)| b - a).sum(),
            released,
            ..job(id, 0, 3600, vec![AllocationRecord { node: 0, cores: 4, memory_mb: 4096, gpus: 0 }])
        };
        let mut s = Store::in_memory().unwrap();
        let run = |label: &str| run(RunKind::Simulation, label);
        let whole = s.record_run(&run("whole"), std::slice::from_ref(&node), [job(1, vec![])]).unwrap();
        let parked = s.record_run(&run("parked"), std::slice::from_ref(&node), [job(1, vec![(0, 1800)])]).unwrap();
        let bills = |r| crate::billing::bill(&s, r, Default::default()).unwrap().jobs[0].bill.allocated;
        assert_eq!((bills(whole).core_hours, bills(whole).memory_gb_hours), (4.0, 4.0));
        assert_eq!((bills(parked).core_hours, bills(parked).memory_gb_hours), (2.0, 4.0), "cores for the half hour it ran, memory throughout");
        s.remove_runs(&[parked]).unwrap();
        let left: i64 = s.connection().query_row("SELECT COUNT(*) FROM released", [], |r| r.get(0)).unwrap();
        assert_eq!(left, 0, "a removed run leaves no interval behind");
    }
}
