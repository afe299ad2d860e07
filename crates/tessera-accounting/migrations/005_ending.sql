-- Tessera accounting store, schema 5: how a job ended, as Slurm's sacct shows
-- it. `signal` is the signal that ended it (ExitCode CODE:SIGNAL: 0:15 for a job
-- ended by SIGTERM at its limit; 0 for none); `reason` why it ended, when the
-- scheduler knows more than the state (a launch that failed: which step, what
-- error); `array_job` and `array_task` name an array task (JobID 7_3). Older
-- records keep a signal folded into exit_code (128 + signal) and no reason.
ALTER TABLE jobs ADD COLUMN signal INTEGER NOT NULL DEFAULT 0 CHECK (signal >= 0);
ALTER TABLE jobs ADD COLUMN reason TEXT NOT NULL DEFAULT '';
ALTER TABLE jobs ADD COLUMN array_job INTEGER;
ALTER TABLE jobs ADD COLUMN array_task INTEGER CHECK ((array_job IS NULL) = (array_task IS NULL));
