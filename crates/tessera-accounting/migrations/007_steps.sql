-- Tessera accounting store, schema 7: what a live job's cgroups counted, and
-- its steps.
-- A job may end OUT_OF_MEMORY (the kernel killed one of its processes for
-- exceeding its memory): the jobs table is rebuilt with that state allowed
-- (SQLite cannot alter a CHECK constraint; see schema 2), and with
-- `max_rss_kb`, the peak memory charged to the job's cgroups (resident and
-- page cache, KiB; NULL where the job was not confined or the record is
-- older).
-- A step is the batch script (`batch`) or one `tessera run` (`0`, `1`, ...),
-- listed by `tessera acct` as JOBID.batch, JOBID.0, ... as sacct lists them.
CREATE TABLE jobs_v7 (
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
    state           TEXT    NOT NULL CHECK (state IN ('COMPLETED', 'FAILED', 'CANCELLED', 'TIMEOUT', 'NODE_FAIL', 'OUT_OF_MEMORY')),
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
    energy_j        REAL,
    suspended_s     INTEGER NOT NULL DEFAULT 0 CHECK (suspended_s >= 0),
    signal          INTEGER NOT NULL DEFAULT 0 CHECK (signal >= 0),
    reason          TEXT    NOT NULL DEFAULT '',
    array_job       INTEGER,
    array_task      INTEGER CHECK ((array_job IS NULL) = (array_task IS NULL)),
    max_rss_kb      INTEGER
);
INSERT INTO jobs_v7 (id, run_id, job_id, name, user, grp, account, partition, submit_time, start_time, end_time, state, exit_code, req_procs,
                     req_mem_mb, time_limit, alloc_cores, alloc_nodes, factor, wall_raw_s, wall_norm_s, cpu_raw_s, cpu_norm_s, core_hours,
                     norm_core_hours, hs06_hours, hs06_per_core, energy_j, suspended_s, signal, reason, array_job, array_task)
    SELECT id, run_id, job_id, name, user, grp, account, partition, submit_time, start_time, end_time, state, exit_code, req_procs,
           req_mem_mb, time_limit, alloc_cores, alloc_nodes, factor, wall_raw_s, wall_norm_s, cpu_raw_s, cpu_norm_s, core_hours,
           norm_core_hours, hs06_hours, hs06_per_core, energy_j, suspended_s, signal, reason, array_job, array_task FROM jobs;
DROP TABLE jobs;
ALTER TABLE jobs_v7 RENAME TO jobs;
CREATE INDEX jobs_run_end ON jobs(run_id, end_time);
CREATE INDEX jobs_run_user ON jobs(run_id, user);
CREATE INDEX jobs_run_job ON jobs(run_id, job_id);
CREATE TABLE steps (
    job         INTEGER NOT NULL REFERENCES jobs(id),
    run_id      INTEGER NOT NULL REFERENCES runs(id),
    step        TEXT    NOT NULL,
    name        TEXT    NOT NULL,
    node_list   TEXT    NOT NULL,
    ntasks      INTEGER NOT NULL,
    start_time  INTEGER NOT NULL,
    end_time    INTEGER NOT NULL CHECK (end_time >= start_time),
    state       TEXT    NOT NULL,
    exit_code   INTEGER NOT NULL,
    signal      INTEGER NOT NULL,
    cpu_s       REAL,
    max_rss_kb  INTEGER
);
CREATE INDEX steps_job ON steps (job);
