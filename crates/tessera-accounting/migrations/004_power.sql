-- Tessera accounting store, schema 4: a power-budgeted run's power over time
-- (for reports): from `time` on, the machine drew `power_w` of its `budget_w`,
-- with `busy_nodes` nodes running jobs whose CPU caps ranged from `cap_min_w`
-- to `cap_max_w` (node-weighted mean `cap_mean_w`). One row per change.
CREATE TABLE power_samples (
    run_id      INTEGER NOT NULL REFERENCES runs(id),
    time        INTEGER NOT NULL,
    power_w     REAL    NOT NULL,
    budget_w    REAL    NOT NULL,
    busy_nodes  INTEGER NOT NULL,
    cap_mean_w  REAL,
    cap_min_w   REAL,
    cap_max_w   REAL
);
CREATE INDEX power_samples_run ON power_samples(run_id, time);
