-- @nestjs/workflows, MySQL / MariaDB, migration 0005: pausing instances and workflows
-- (PostgreSQL's 0007).
--
-- `client.pause(id)` sets `paused` (and `pause_reason`) on the instance and leaves its status,
-- wake-up, waits and journal as they are: reads show such an unfinished instance as `paused`, and
-- a claim passes it over, so `resume()` only has to clear the flag for its sleeps, retry backoffs
-- and wait timeouts that fell due meanwhile to take effect at once (no time is added to them). The
-- lease holder's writes never touch the flag, so a running execution can't overwrite a pause.
--
-- `client.pauseWorkflow(name, { version? })` stores a row in `paused_workflows` (`version` 0: every
-- version); every claim reads that table in its own statement, so no process claims an instance of
-- a paused workflow however stale its view is. Columns added last, so MySQL 8.0 and MariaDB 10.6
-- add them in place; as in 0003, the runner looks each column up first, so a stopped run resumes.

ALTER TABLE `{{schema}}_instances` ADD COLUMN paused TINYINT(1) NOT NULL DEFAULT 0;
ALTER TABLE `{{schema}}_instances` ADD COLUMN pause_reason TEXT NULL;

CREATE TABLE IF NOT EXISTS `{{schema}}_paused_workflows` (
  workflow   VARCHAR(255) NOT NULL,
  version    INT NOT NULL,
  reason     TEXT NULL,
  paused_at  BIGINT NOT NULL,
  PRIMARY KEY (workflow, version)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_bin;
