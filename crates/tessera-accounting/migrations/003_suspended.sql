-- Tessera accounting store, schema 3: the seconds a job spent suspended
-- (preempted by a higher tier, or by an operator). Its wall time, core hours
-- and usage count only the time it ran; the suspended seconds are kept here
-- so that start, end and suspension add up. Older records were never suspended
-- or were charged as before: 0.
ALTER TABLE jobs ADD COLUMN suspended_s INTEGER NOT NULL DEFAULT 0 CHECK (suspended_s >= 0);
