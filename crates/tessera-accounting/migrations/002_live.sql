-- Tessera accounting store, schema 2: a live controller appends each job as it
-- ends; (run_id, job_id) finds whether a job is already recorded, so a replay
-- after a crash writes no record twice.
CREATE INDEX jobs_run_job ON jobs(run_id, job_id);
