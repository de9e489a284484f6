-- @nestjs/workflows, MySQL / MariaDB, migration 0001: the store's tables.
--
-- {{schema}} is the store's schema name (`nest_workflows` by default): every table is
-- `<schema>_<table>` in the connection's database. Apply with
-- `npx nest-workflows migrate --mysql <url> --schema <schema>`, or print everything with
-- `npx nest-workflows sql --mysql --schema <schema>` for your own migration tool.
--
-- One code path for MariaDB 10.6+ and MySQL 8.0+: InnoDB, utf8mb4, no JSON type, no CHECK
-- constraints, no partial or functional indexes (a stored generated column stands in for the one
-- partial index the claim needs). Every statement is CREATE TABLE IF NOT
-- EXISTS with its indexes inline, so a run stopped halfway (MySQL DDL is not transactional) can
-- apply the same statement again.
--
-- utf8mb4_bin everywhere: keys compare byte-wise (code point order), as PostgreSQL's COLLATE "C"
-- does, so `Order-1` and `order-1` are two ids. Payloads (inputs, outputs, errors, statuses,
-- journal entries, signal payloads, schedules) are LONGTEXT holding the JSON text as written: the
-- JSON type would reorder keys and drop duplicates. Times are epoch milliseconds (BIGINT).
--
-- Key lengths: an InnoDB index entry holds at most 3072 bytes (DYNAMIC rows), 4 bytes per
-- utf8mb4 character, so VARCHAR(255) keys and the journal's (instance_id 255, name 512) primary
-- key fit. Longer combinations (a signal's topic: name and key) are indexed by their SHA-256.

CREATE TABLE IF NOT EXISTS `{{schema}}_instances` (
  id                  VARCHAR(255) NOT NULL,
  workflow            VARCHAR(255) NOT NULL,
  version             INT NOT NULL,
  status              VARCHAR(24) NOT NULL,
  input               LONGTEXT NULL,
  output              LONGTEXT NULL,
  error               LONGTEXT NULL,
  custom_status       LONGTEXT NULL,
  parent_id           VARCHAR(255) NULL,
  parent_close        VARCHAR(16) NULL,
  concurrency_key     VARCHAR(255) NULL,
  rate_limit_key      VARCHAR(255) NULL,
  priority            INT NOT NULL DEFAULT 0,
  schedule_id         VARCHAR(255) NULL,
  scheduled_at        BIGINT NULL,
  deadline            BIGINT NULL,
  wake_at             BIGINT NULL,
  runs                INT NOT NULL DEFAULT 0,
  signal_cursor       BIGINT NOT NULL,
  lease_token         VARCHAR(255) NULL,
  lease_owner         VARCHAR(255) NULL,
  lease_until         BIGINT NULL,
  cancel_requested    TINYINT(1) NOT NULL DEFAULT 0,
  terminate_requested TINYINT(1) NOT NULL DEFAULT 0,
  cancel_reason       LONGTEXT NULL,
  -- The waits of the last suspension as a JSON array of signal topics (signal-topic.ts), in
  -- registration order, for get(); the `waits` table indexes them for signals.
  wait_topics         LONGTEXT NOT NULL,
  created_at          BIGINT NOT NULL,
  updated_at          BIGINT NOT NULL,
  -- The priority of an instance a claim may take someday (unfinished, with a wake-up time), else
  -- NULL: the claim's index leaves finished and signal-only waiters out this way, where PostgreSQL
  -- uses a partial index.
  claim_priority      INT AS (CASE WHEN status IN ('pending', 'running', 'suspended', 'compensating')
                        AND wake_at IS NOT NULL THEN priority END) STORED,
  PRIMARY KEY (id),
  -- claim(): walked in claim order (FOR UPDATE SKIP LOCKED) until it has its `limit`, so it locks
  -- only what it takes; a sort after reading would lock every due row.
  KEY instances_due (claim_priority, wake_at, created_at, id),
  -- claim(): leases that lapsed (a crashed or stalled worker's).
  KEY instances_lapsed (lease_until),
  -- listen()'s poll: the newest unleased instance that is due.
  KEY instances_wake (lease_token, wake_at),
  -- claim() under concurrency limits: the live leases per workflow and key.
  KEY instances_leased (workflow, concurrency_key, lease_until),
  -- purge(): finished instances, oldest first.
  KEY instances_finished (status, updated_at),
  -- list(): everything by createdAt, the children of a parent, the runs of a schedule.
  KEY instances_created (created_at, id),
  KEY instances_parent (parent_id, created_at, id),
  KEY instances_schedule (schedule_id, created_at, id)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_bin;

-- One row per journal entry. `seq` (AUTO_INCREMENT) orders the journal by first write: an upsert
-- of an existing name keeps its row and its seq. The foreign key takes the journal with a
-- deleted instance, and makes a journal insert wait for (then fail on) an instance being deleted.
CREATE TABLE IF NOT EXISTS `{{schema}}_journal` (
  instance_id VARCHAR(255) NOT NULL,
  name        VARCHAR(512) NOT NULL,
  seq         BIGINT NOT NULL AUTO_INCREMENT,
  entry       LONGTEXT NOT NULL,
  PRIMARY KEY (instance_id, name),
  KEY journal_seq (seq),
  CONSTRAINT `{{schema}}_journal_instance` FOREIGN KEY (instance_id) REFERENCES `{{schema}}_instances` (id) ON DELETE CASCADE
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_bin;

-- The waits of suspended instances, by topic (SHA-256 of signal-topic.ts's string): what a
-- signal's wake-up joins. `runs` is the instance's run count when it registered them: rows of an
-- earlier suspension (runs lower than the instance's) never match.
CREATE TABLE IF NOT EXISTS `{{schema}}_waits` (
  topic_hash  BINARY(32) NOT NULL,
  instance_id VARCHAR(255) NOT NULL,
  runs        INT NOT NULL,
  PRIMARY KEY (topic_hash, instance_id),
  KEY waits_instance (instance_id, runs),
  CONSTRAINT `{{schema}}_waits_instance` FOREIGN KEY (instance_id) REFERENCES `{{schema}}_instances` (id) ON DELETE CASCADE
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_bin;

-- Ids are AUTO_INCREMENT: allocated in order, so a signal that takes its topic's lock after a
-- reader read the last id gets a higher one (see the store for why that is enough).
CREATE TABLE IF NOT EXISTS `{{schema}}_signals` (
  id         BIGINT NOT NULL AUTO_INCREMENT,
  name       VARCHAR(255) NOT NULL,
  `key`      VARCHAR(255) NULL,
  topic_hash BINARY(32) NOT NULL,
  dedupe_id  VARCHAR(255) NULL,
  payload    LONGTEXT NULL,
  created_at BIGINT NOT NULL,
  PRIMARY KEY (id),
  -- signal(..., { id }): insert-or-ignore on this key stores a signal once. NULLs never conflict.
  UNIQUE KEY signals_dedupe (name, dedupe_id),
  -- signals() and write()'s "a signal above the cursor matches a new wait".
  KEY signals_topic (topic_hash, id)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_bin;

-- Lock rows: one per signal topic (a signal takes it FOR UPDATE, a suspension waiting on the topic
-- LOCK IN SHARE MODE) and one per concurrency-limited workflow (a limited claim takes it FOR
-- UPDATE). Keyed by SHA-256 of the lock's name; rows are created on first use.
CREATE TABLE IF NOT EXISTS `{{schema}}_locks` (
  lock_hash BINARY(32) NOT NULL,
  PRIMARY KEY (lock_hash)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_bin;

-- Rate-limit windows, one row per workflow (has_key 0, key '') and per rate-limit key. A claim
-- locks the rows it takes room in (inserting missing ones), so counts are exact under the lock.
CREATE TABLE IF NOT EXISTS `{{schema}}_rate_windows` (
  workflow   VARCHAR(255) NOT NULL,
  has_key    TINYINT(1) NOT NULL,
  `key`      VARCHAR(255) NOT NULL,
  window_end BIGINT NOT NULL,
  count      INT NOT NULL,
  PRIMARY KEY (workflow, has_key, `key`),
  KEY rate_windows_end (window_end)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_bin;

CREATE TABLE IF NOT EXISTS `{{schema}}_schedules` (
  id          VARCHAR(255) NOT NULL,
  workflow    VARCHAR(255) NOT NULL,
  declared    TINYINT(1) NOT NULL,
  spec        LONGTEXT NULL,
  input       LONGTEXT NULL,
  paused      TINYINT(1) NOT NULL,
  wake_at     BIGINT NULL,
  state       LONGTEXT NULL,
  revision    INT NOT NULL,
  lease_token VARCHAR(255) NULL,
  lease_owner VARCHAR(255) NULL,
  lease_until BIGINT NULL,
  created_at  BIGINT NOT NULL,
  updated_at  BIGINT NOT NULL,
  PRIMARY KEY (id),
  -- claimSchedules(): the due ones, most overdue first.
  KEY schedules_due (paused, wake_at, id),
  KEY schedules_workflow (workflow, id)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_bin;
