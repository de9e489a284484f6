-- @nestjs/workflows, MySQL / MariaDB, migration 0004: a counter of the cancels and terminates of
-- leased instances, so the process running one hears of it at once (PostgreSQL sends a NOTIFY).
--
-- MySQL has no LISTEN/NOTIFY: each process finds work made due by others with a short poll of
-- `instances_wake` (listen()), which never sees a leased instance. A cancel or terminate of a
-- leased instance adds one to `seq` in the same statement that sets the instance's flags (an
-- UPDATE of both tables), and the poll reads `seq` in the statement it sends anyway (a second
-- scalar subquery, by primary key). When it moves, a process that holds leases reads the flags of
-- the instances it holds (one statement, only then) and interrupts those with a request, instead
-- of waiting for its next heartbeat. One row, `id` 1: inserted here (INSERT IGNORE, so a run
-- stopped before its record may apply it again). Without the row, cancels still work and are
-- heard at the next heartbeat, as before this migration.

CREATE TABLE IF NOT EXISTS `{{schema}}_cancel_notices` (
  id  TINYINT NOT NULL,
  seq BIGINT NOT NULL,
  PRIMARY KEY (id)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_bin;

INSERT IGNORE INTO `{{schema}}_cancel_notices` (id, seq) VALUES (1, 0);
