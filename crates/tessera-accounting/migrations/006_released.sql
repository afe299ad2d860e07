-- Tessera accounting store, schema 6: the intervals in which a job, suspended by
-- preemption or by the gang scheduler, had given its cores back (it kept its
-- memory and GPUs). The true-overhead timeline and the fair bills charge its
-- cores only outside them. A job suspended by an operator keeps its cores and
-- has no row here. Older records have none.
CREATE TABLE released (
    job         INTEGER NOT NULL REFERENCES jobs(id),
    run_id      INTEGER NOT NULL REFERENCES runs(id),
    start_time  INTEGER NOT NULL,
    end_time    INTEGER NOT NULL CHECK (end_time >= start_time)
);
CREATE INDEX released_job ON released (job);
