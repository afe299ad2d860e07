-- Tessera accounting store, schema 1.
-- Times are integer seconds on the run's own clock; epoch = time + runs.epoch_offset.

CREATE TABLE runs (
    id            INTEGER PRIMARY KEY,
    kind          TEXT    NOT NULL CHECK (kind IN ('simulation', 'live')),
    label         TEXT    NOT NULL,
    site          TEXT    NOT NULL,
    cluster       TEXT    NOT NULL,
    policy        TEXT    NOT NULL,
    epoch_offset  INTEGER NOT NULL DEFAULT 0,
    recorded_at   INTEGER NOT NULL,
    -- 1 once every job of the run is written (a simulation writes in batches)
    complete      INTEGER NOT NULL DEFAULT 0
);

CREATE TABLE nodes (
    run_id        INTEGER NOT NULL REFERENCES runs(id),
    node_id       INTEGER NOT NULL,
    name          TEXT    NOT NULL,
    node_type     TEXT    NOT NULL,
    partition     TEXT    NOT NULL,
    cores         INTEGER NOT NULL,
    memory_mb     INTEGER NOT NULL,
    gpus          INTEGER NOT NULL,
    hs06_per_core REAL,
    factor        REAL    NOT NULL,
    -- the partition's canonical unit (0: resource not part of it)
    unit_cores    INTEGER NOT NULL,
    unit_memory_mb INTEGER NOT NULL,
    unit_gpus     INTEGER NOT NULL,
    PRIMARY KEY (run_id, node_id)
);

-- Capacity of every node over time (a simulation has one row per node).
CREATE TABLE node_capacity (
    run_id      INTEGER NOT NULL,
    node_id     INTEGER NOT NULL,
    valid_from  INTEGER NOT NULL,
    valid_to    INTEGER,
    cores       INTEGER NOT NULL,
    memory_mb   INTEGER NOT NULL,
    gpus        INTEGER NOT NULL,
    FOREIGN KEY (run_id, node_id) REFERENCES nodes(run_id, node_id)
);

CREATE TABLE jobs (
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
    state           TEXT    NOT NULL CHECK (state IN ('COMPLETED', 'FAILED', 'CANCELLED', 'TIMEOUT')),
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
CREATE INDEX jobs_run_end ON jobs(run_id, end_time);
CREATE INDEX jobs_run_user ON jobs(run_id, user);

-- What each job held on each node, and when: enough to rebuild what was free on
-- every node at every instant.
CREATE TABLE allocations (
    job       INTEGER NOT NULL REFERENCES jobs(id),
    run_id    INTEGER NOT NULL,
    node_id   INTEGER NOT NULL,
    cores     INTEGER NOT NULL,
    memory_mb INTEGER NOT NULL,
    gpus      INTEGER NOT NULL,
    start_time INTEGER NOT NULL,
    end_time   INTEGER NOT NULL
);
CREATE INDEX allocations_node ON allocations(run_id, node_id, start_time);
CREATE INDEX allocations_job ON allocations(job);
