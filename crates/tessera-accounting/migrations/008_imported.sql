-- Tessera accounting store, schema 8: runs imported from another scheduler's
-- history (`tessera import sacct`) are of kind 'imported'. The runs table is
-- rebuilt with that kind allowed (SQLite cannot alter a CHECK constraint; see
-- schema 2); every other table refers to it by name and keeps its rows.
CREATE TABLE runs_v8 (
    id            INTEGER PRIMARY KEY,
    kind          TEXT    NOT NULL CHECK (kind IN ('simulation', 'live', 'imported')),
    label         TEXT    NOT NULL,
    site          TEXT    NOT NULL,
    cluster       TEXT    NOT NULL,
    policy        TEXT    NOT NULL,
    epoch_offset  INTEGER NOT NULL DEFAULT 0,
    recorded_at   INTEGER NOT NULL,
    -- 1 once every job of the run is written (a simulation writes in batches)
    complete      INTEGER NOT NULL DEFAULT 0
);
INSERT INTO runs_v8 (id, kind, label, site, cluster, policy, epoch_offset, recorded_at, complete)
    SELECT id, kind, label, site, cluster, policy, epoch_offset, recorded_at, complete FROM runs;
DROP TABLE runs;
ALTER TABLE runs_v8 RENAME TO runs;
