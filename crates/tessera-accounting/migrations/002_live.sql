-- Tessera accounting store, schema 2, for live controllers.
-- A job may end NODE_FAIL (a node it ran on failed and it did not ask to be
-- requeued): the jobs table is rebuilt with that state allowed (SQLite cannot
-- alter a CHECK constraint; the store runs migrations with foreign keys off and
-- checks every reference before committing).
-- A live controller appends each job as it ends; (run_id, job_id) finds whether a
-- job is already recorded, so a replay after a crash writes no record twice.
CREATE TABLE jobs_v2 (
    id              INTEGER PRIMARY KEY,
    run_id          INTEGER NOT NULL REFERENCES runs(id),
    job_id          INTEGER NOT NULL,
    name            TEXT    NOT NULL,
    user            TEXT    NOT NULL,
    grp             TEXT    NOT NULL,
    account         TEXT    NOT NULL,
    partition       TEXT    NOT NULL,
    submit_time     INTEGER NOT NULL,
    start_time      INTEGER NOT NULL,
    end_time        INTEGER NOT NULL CHECK (end_time >= start_time),
    state           TEXT    NOT NULL CHECK (state IN ('COMPLETED', 'FAILED', 'CANCELLED', 'TIMEOUT', 'NODE_FAIL')),
    exit_code       INTEGER NOT NULL,
    req_procs       INTEGER NOT NULL,
    req_mem_mb      INTEGER NOT NULL,
    time_limit      INTEGER NOT NULL,
    alloc_cores     INTEGER NOT NULL,
    alloc_nodes     INTEGER NOT NULL,
    factor          REAL    NOT NULL,
    wall_raw_s      INTEGER NOT NULL,
    wall_norm_s     REAL    NOT NULL,
    cpu_raw_s       REAL    NOT NULL,
    cpu_norm_s      REAL    NOT NULL,
    core_hours      REAL    NOT NULL,
    norm_core_hours REAL    NOT NULL,
    hs06_hours      REAL,
    hs06_per_core   REAL,
    energy_j        REAL
);
INSERT INTO jobs_v2 SELECT * FROM jobs;
DROP TABLE jobs;
ALTER TABLE jobs_v2 RENAME TO jobs;
CREATE INDEX jobs_run_end ON jobs(run_id, end_time);
CREATE INDEX jobs_run_user ON jobs(run_id, user);
CREATE INDEX jobs_run_job ON jobs(run_id, job_id);
