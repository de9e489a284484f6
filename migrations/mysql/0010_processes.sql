-- @nestjs/workflows, MySQL / MariaDB, migration 0010: worker processes (the dashboard's Versions page).
--
-- One row per running process, under an id it draws at startup: what its registry declares (JSON,
-- `[{ "workflow", "version" }]`), when it started and when it last recorded itself. Each process
-- upserts its row on a slow heartbeat and deletes it on a clean shutdown; rows no process refreshed
-- for a while are stale (a crash) and deleted by the next process that records itself. No claim
-- reads this table: it only tells an operator which versions the live processes can run.

CREATE TABLE IF NOT EXISTS `{{schema}}_processes` (
  id         VARCHAR(64) NOT NULL,
  owner      TEXT NOT NULL,
  host       TEXT NOT NULL,
  pid        INT NOT NULL,
  declared   LONGTEXT NOT NULL,
  started_at BIGINT NOT NULL,
  seen_at    BIGINT NOT NULL,
  PRIMARY KEY (id)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_bin;
