-- @nestjs/workflows, SQLite, migration 0001: the store's tables.
--
-- {{schema}} is the store's schema name (`nest_workflows` by default): every table is
-- `<schema>_<table>` in the database file. Apply with `npx nest-workflows migrate --sqlite <file>`,
-- or print everything with `npx nest-workflows sql --sqlite --schema <schema>` for your own tool.
-- SQLite runs DDL in transactions: the whole file applies, with its record, or nothing does.
--
-- There are no lock tables: every write of the store is a BEGIN IMMEDIATE transaction, which holds
-- the database's one write lock until it commits, so writes of every process are serialized and a
-- claim, a signal or a suspension sees all that committed before it. Text compares byte-wise (the
-- default BINARY collation: code point order, as PostgreSQL's COLLATE "C"). Payloads are JSON text
-- exactly as written; times are epoch milliseconds. SQLite's indexes have no size limit: the store
-- still keeps every key to STORE_KEY_LIMITS, so an application moves between the stores as it is.

CREATE TABLE "{{schema}}_instances" (
  id                  TEXT NOT NULL PRIMARY KEY,
  workflow            TEXT NOT NULL,
  version             INTEGER NOT NULL,
  status              TEXT NOT NULL,
  input               TEXT,
  output              TEXT,
  error               TEXT,
  custom_status       TEXT,
  parent_id           TEXT,
  parent_close        TEXT,
  concurrency_key     TEXT,
  rate_limit_key      TEXT,
  priority            INTEGER NOT NULL DEFAULT 0,
  schedule_id         TEXT,
  scheduled_at        INTEGER,
  deadline            INTEGER,
  run_timeout         INTEGER,
  wake_at             INTEGER,
  runs                INTEGER NOT NULL DEFAULT 0,
  signal_cursor       INTEGER NOT NULL,
  lease_token         TEXT,
  lease_owner         TEXT,
  lease_until         INTEGER,
  cancel_requested    INTEGER NOT NULL DEFAULT 0,
  terminate_requested INTEGER NOT NULL DEFAULT 0,
  cancel_reason       TEXT,
  trace_context       TEXT,
  -- The waits of the last suspension as a JSON array of signal topics (signal-topic.ts), in
  -- registration order, for get(); the waits table indexes them for signals.
  wait_topics         TEXT NOT NULL DEFAULT '[]',
  created_at          INTEGER NOT NULL,
  updated_at          INTEGER NOT NULL
);

-- claim(): the instances a claim may take someday (unfinished, with a wake-up time), in claim
-- order; finished instances and signal-only waiters are left out of the index.
CREATE INDEX "{{schema}}_instances_due" ON "{{schema}}_instances" (priority, wake_at, created_at, id)
  WHERE status IN ('pending', 'running', 'suspended', 'compensating') AND wake_at IS NOT NULL;
-- claim() under concurrency limits: the live leases per workflow and key; and lapsed leases.
CREATE INDEX "{{schema}}_instances_leased" ON "{{schema}}_instances" (workflow, concurrency_key, lease_until)
  WHERE lease_token IS NOT NULL;
-- signal(): the suspended instances of a topic are found through the waits table, by primary key.
-- purge(): finished instances, oldest first.
CREATE INDEX "{{schema}}_instances_finished" ON "{{schema}}_instances" (status, updated_at);
-- list(): everything by createdAt, by status, by workflow, the children of a parent, the runs of a schedule.
CREATE INDEX "{{schema}}_instances_created" ON "{{schema}}_instances" (created_at, id);
CREATE INDEX "{{schema}}_instances_status_created" ON "{{schema}}_instances" (status, created_at, id);
CREATE INDEX "{{schema}}_instances_workflow_created" ON "{{schema}}_instances" (workflow, created_at, id);
CREATE INDEX "{{schema}}_instances_parent" ON "{{schema}}_instances" (parent_id, created_at, id);
CREATE INDEX "{{schema}}_instances_schedule" ON "{{schema}}_instances" (schedule_id, created_at, id);

-- One row per journal entry; `seq` (the rowid) orders the journal by first write: an upsert of an
-- existing name keeps its row and its seq.
CREATE TABLE "{{schema}}_journal" (
  seq         INTEGER PRIMARY KEY,
  instance_id TEXT NOT NULL,
  name        TEXT NOT NULL,
  entry       TEXT NOT NULL,
  UNIQUE (instance_id, name)
);

-- The waits of suspended instances, by topic (signal-topic.ts): what a signal's wake-up joins.
CREATE TABLE "{{schema}}_waits" (
  topic       TEXT NOT NULL,
  instance_id TEXT NOT NULL,
  PRIMARY KEY (topic, instance_id)
) WITHOUT ROWID;
CREATE INDEX "{{schema}}_waits_instance" ON "{{schema}}_waits" (instance_id);

-- AUTOINCREMENT: an id is never given out again, even after the newest signal was deleted (a
-- reopen retracts one), so ids only grow and sqlite_sequence holds the last one.
CREATE TABLE "{{schema}}_signals" (
  id         INTEGER PRIMARY KEY AUTOINCREMENT,
  name       TEXT NOT NULL,
  key        TEXT,
  topic      TEXT NOT NULL,
  dedupe_id  TEXT,
  payload    TEXT,
  created_at INTEGER NOT NULL,
  -- signal(..., { id }): insert-or-ignore on this key stores a signal once. NULLs never conflict.
  UNIQUE (name, dedupe_id)
);
-- signals() and write()'s "a signal above the cursor matches a new wait".
CREATE INDEX "{{schema}}_signals_topic" ON "{{schema}}_signals" (topic, id);
CREATE INDEX "{{schema}}_signals_created" ON "{{schema}}_signals" (created_at);

-- Rate-limit windows, one row per workflow (has_key 0, key '') and per rate-limit key.
CREATE TABLE "{{schema}}_rate_windows" (
  workflow   TEXT NOT NULL,
  has_key    INTEGER NOT NULL,
  key        TEXT NOT NULL,
  window_end INTEGER NOT NULL,
  count      INTEGER NOT NULL,
  PRIMARY KEY (workflow, has_key, key)
) WITHOUT ROWID;
CREATE INDEX "{{schema}}_rate_windows_end" ON "{{schema}}_rate_windows" (window_end);

-- The cancels and terminates requested, newest last, so every process hears of each one at once
-- (SQLite has no LISTEN/NOTIFY: listen() reads the rows above the last it saw when the file
-- changed) and the process holding that lease stops it instead of waiting for its next heartbeat.
-- requestCancel() keeps only the newest rows.
CREATE TABLE "{{schema}}_cancel_requests" (
  seq         INTEGER PRIMARY KEY AUTOINCREMENT,
  instance_id TEXT NOT NULL
);

CREATE TABLE "{{schema}}_schedules" (
  id          TEXT NOT NULL PRIMARY KEY,
  workflow    TEXT NOT NULL,
  declared    INTEGER NOT NULL,
  spec        TEXT,
  input       TEXT,
  paused      INTEGER NOT NULL,
  wake_at     INTEGER,
  state       TEXT,
  revision    INTEGER NOT NULL,
  lease_token TEXT,
  lease_owner TEXT,
  lease_until INTEGER,
  created_at  INTEGER NOT NULL,
  updated_at  INTEGER NOT NULL
);
-- claimSchedules(): the due ones, most overdue first.
CREATE INDEX "{{schema}}_schedules_due" ON "{{schema}}_schedules" (paused, wake_at, id);
CREATE INDEX "{{schema}}_schedules_workflow" ON "{{schema}}_schedules" (workflow, id);
