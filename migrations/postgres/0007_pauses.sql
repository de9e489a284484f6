-- @nestjs/workflows, PostgreSQL, migration 0007: pausing instances and workflows.
--
-- `client.pause(id)` sets `paused` (and `pause_reason`) on the instance and leaves its status,
-- wake-up, waits and journal as they are: reads show such an unfinished instance as `paused`, and
-- a claim passes it over, so `resume()` only has to clear the flag for its sleeps, retry backoffs
-- and wait timeouts that fell due meanwhile to take effect at once (no time is added to them). The
-- lease holder's writes never touch the flag, so a running execution can't overwrite a pause.
--
-- `client.pauseWorkflow(name, { version? })` stores a row in `paused_workflows` (`version` 0: every
-- version); every claim reads that table in its own statement, so no process claims an instance of
-- a paused workflow however stale its view is. Adding columns with constant defaults rewrites
-- nothing (PostgreSQL 11+).

ALTER TABLE {{schema}}.instances ADD COLUMN paused boolean NOT NULL DEFAULT false;
ALTER TABLE {{schema}}.instances ADD COLUMN pause_reason text;

CREATE TABLE {{schema}}.paused_workflows (
  workflow   text NOT NULL,
  version    integer NOT NULL,
  reason     text,
  paused_at  bigint NOT NULL,
  PRIMARY KEY (workflow, version)
);
