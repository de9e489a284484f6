-- @nestjs/workflows, SQLite, migration 0002: pausing instances and workflows (PostgreSQL's 0007).
--
-- `client.pause(id)` sets `paused` (and `pause_reason`) on the instance and leaves its status,
-- wake-up, waits and journal as they are: reads show such an unfinished instance as `paused`, and
-- a claim passes it over, so `resume()` only has to clear the flag for its sleeps, retry backoffs
-- and wait timeouts that fell due meanwhile to take effect at once (no time is added to them). The
-- lease holder's writes never touch the flag, so a running execution can't overwrite a pause.
--
-- `client.pauseWorkflow(name, { version? })` stores a row in `paused_workflows` (`version` 0: every
-- version); every claim reads that table in its own transaction, under the file's write lock.

ALTER TABLE "{{schema}}_instances" ADD COLUMN paused INTEGER NOT NULL DEFAULT 0;
ALTER TABLE "{{schema}}_instances" ADD COLUMN pause_reason TEXT;

CREATE TABLE "{{schema}}_paused_workflows" (
  workflow   TEXT NOT NULL,
  version    INTEGER NOT NULL,
  reason     TEXT,
  paused_at  INTEGER NOT NULL,
  PRIMARY KEY (workflow, version)
);
