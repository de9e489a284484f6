-- @nestjs/workflows, SQLite, migration 0007: worker processes (the dashboard's Versions page).
--
-- One row per running process, under an id it draws at startup: what its registry declares (JSON,
-- `[{ "workflow", "version" }]`), when it started and when it last recorded itself. Each process
-- upserts its row on a slow heartbeat and deletes it on a clean shutdown; rows no process refreshed
-- for a while are stale (a crash) and deleted by the next process that records itself. No claim
-- reads this table: it only tells an operator which versions the live processes can run.
CREATE TABLE "{{schema}}_processes" (
  id         TEXT NOT NULL PRIMARY KEY,
  owner      TEXT NOT NULL,
  host       TEXT NOT NULL,
  pid        INTEGER NOT NULL,
  declared   TEXT NOT NULL,
  started_at INTEGER NOT NULL,
  seen_at    INTEGER NOT NULL
) WITHOUT ROWID;
