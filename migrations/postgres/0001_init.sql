-- @nestjs/workflows, PostgreSQL, migration 0001: the store's tables.
--
-- {{schema}} is the store's schema, quoted ("nest_workflows" by default). Apply with
-- `npx nest-workflows migrate --postgres <url> --schema <schema>`, or print everything with
-- `npx nest-workflows sql --postgres --schema <schema>` for your own migration tool.
--
-- Times are epoch milliseconds (bigint). Payloads (inputs, outputs, errors, statuses, journal
-- entries, signal payloads, schedules) are `json`, not `jsonb`: `json` keeps the text as written, so
-- key order and `null` versus a missing field come back exactly. Ids, names and keys are
-- COLLATE "C": byte order, whatever the database's collation, so every store orders them alike.

CREATE TABLE {{schema}}.instances (
  id                  text COLLATE "C" NOT NULL,
  workflow            text COLLATE "C" NOT NULL,
  version             integer NOT NULL,
  status              text NOT NULL,
  input               json,
  output              json,
  error               json,
  custom_status       json,
  parent_id           text COLLATE "C",
  parent_close        text,
  concurrency_key     text COLLATE "C",
  rate_limit_key      text COLLATE "C",
  priority            integer NOT NULL DEFAULT 0,
  schedule_id         text COLLATE "C",
  scheduled_at        bigint,
  deadline            bigint,
  wake_at             bigint,
  runs                integer NOT NULL DEFAULT 0,
  signal_cursor       bigint NOT NULL,
  lease_token         text COLLATE "C",
  lease_owner         text,
  lease_until         bigint,
  cancel_requested    boolean NOT NULL DEFAULT false,
  terminate_requested boolean NOT NULL DEFAULT false,
  cancel_reason       text,
  -- The waits of the last suspension, each as its signal topic (name and exact key, see
  -- signal-topic.ts), in registration order; '{}' when none.
  wait_topics         text[] NOT NULL DEFAULT '{}',
  -- The journal's last `seq`: a new entry takes the next one, so the journal keeps first-write order.
  journal_seq         integer NOT NULL DEFAULT 0,
  created_at          bigint NOT NULL,
  updated_at          bigint NOT NULL,
  CONSTRAINT instances_pkey PRIMARY KEY (id),
  CONSTRAINT instances_status_check CHECK (status IN
    ('pending', 'running', 'suspended', 'compensating', 'completed', 'failed', 'cancelled', 'compensation_failed')),
  CONSTRAINT instances_parent_close_check CHECK (parent_close IN ('cancel', 'terminate', 'abandon'))
);

-- claim(): the due instances without a lease, in claim order. The claim repeats the predicate
-- literally and walks the index in order until it has its `limit` (FOR UPDATE SKIP LOCKED); the
-- ranges of the worker's workflow names and versions are index conditions on the trailing columns,
-- so due instances it doesn't run are passed over in the index. Running instances (leased) are not
-- in it at all. See the EXPLAIN notes at the end of this file.
CREATE INDEX instances_due ON {{schema}}.instances (priority, wake_at, created_at, id, workflow, version)
  WHERE status IN ('pending', 'running', 'suspended', 'compensating') AND wake_at IS NOT NULL AND lease_token IS NULL;

-- claim(): instances whose lease may have lapsed (a crashed or stalled worker's).
CREATE INDEX instances_leased_until ON {{schema}}.instances (lease_until) WHERE lease_token IS NOT NULL;

-- signal(): the suspended instances with a wait for a topic (wait_topics @> ARRAY[topic]).
-- fastupdate off: every signal searches this index, and a search reads all of GIN's pending list,
-- which would otherwise grow between vacuums; inserting each suspension's few topics directly is cheap.
CREATE INDEX instances_waits ON {{schema}}.instances USING gin (wait_topics) WITH (fastupdate = off)
  WHERE status = 'suspended';

-- claim() under concurrency limits: the instances holding a lease, per workflow and key.
CREATE INDEX instances_leased ON {{schema}}.instances (workflow, concurrency_key) WHERE lease_token IS NOT NULL;

-- purge(): finished instances, oldest first.
CREATE INDEX instances_finished ON {{schema}}.instances (updated_at, id)
  WHERE status IN ('completed', 'failed', 'cancelled', 'compensation_failed');

-- list(): everything by createdAt, and the children of a parent or the runs of a schedule.
CREATE INDEX instances_created ON {{schema}}.instances (created_at, id);
CREATE INDEX instances_parent ON {{schema}}.instances (parent_id, created_at, id) WHERE parent_id IS NOT NULL;
CREATE INDEX instances_schedule ON {{schema}}.instances (schedule_id, created_at, id) WHERE schedule_id IS NOT NULL;

-- One row per journal entry, the entry as one JSON document. The foreign key makes a delete take the
-- journal with it, and makes a write's journal insert wait for (and then find gone) an instance that
-- a concurrent delete removes, so no entry outlives its instance.
CREATE TABLE {{schema}}.journal (
  instance_id text COLLATE "C" NOT NULL,
  name        text COLLATE "C" NOT NULL,
  seq         integer NOT NULL,
  entry       json NOT NULL,
  CONSTRAINT journal_pkey PRIMARY KEY (instance_id, name),
  CONSTRAINT journal_instance_fkey FOREIGN KEY (instance_id) REFERENCES {{schema}}.instances (id) ON DELETE CASCADE
);

-- Signals get ids in order under the signal lock (an advisory lock, see the store).
CREATE TABLE {{schema}}.signals (
  id         bigint NOT NULL,
  name       text COLLATE "C" NOT NULL,
  key        text COLLATE "C",
  -- name and exact key as one value (signal-topic.ts): what waits match on.
  topic      text COLLATE "C" NOT NULL,
  dedupe_id  text COLLATE "C",
  payload    json,
  created_at bigint NOT NULL,
  CONSTRAINT signals_pkey PRIMARY KEY (id),
  -- signal(..., { id }): insert-or-ignore on this key stores a signal once. NULLs never conflict.
  CONSTRAINT signals_dedupe_key UNIQUE (name, dedupe_id)
);

-- signals() and write()'s "a signal above the cursor matches a new wait": Index Scan using
-- signals_topic, Index Cond: (topic = $topic AND id > $after).
CREATE INDEX signals_topic ON {{schema}}.signals (topic, id);

-- Rate-limit windows, one row per workflow (has_key false, key '') and per rate-limit key. A claim
-- locks the rows it takes room in (inserting missing ones), so counts are exact under the lock.
CREATE TABLE {{schema}}.rate_windows (
  workflow   text COLLATE "C" NOT NULL,
  has_key    boolean NOT NULL,
  key        text COLLATE "C" NOT NULL,
  window_end bigint NOT NULL,
  count      integer NOT NULL,
  CONSTRAINT rate_windows_pkey PRIMARY KEY (workflow, has_key, key)
);

CREATE INDEX rate_windows_end ON {{schema}}.rate_windows (window_end);

CREATE TABLE {{schema}}.schedules (
  id          text COLLATE "C" NOT NULL,
  workflow    text COLLATE "C" NOT NULL,
  declared    boolean NOT NULL,
  spec        json,
  input       json,
  paused      boolean NOT NULL,
  wake_at     bigint,
  state       json,
  revision    integer NOT NULL,
  lease_token text COLLATE "C",
  lease_owner text,
  lease_until bigint,
  created_at  bigint NOT NULL,
  updated_at  bigint NOT NULL,
  CONSTRAINT schedules_pkey PRIMARY KEY (id)
);

-- claimSchedules(): the due ones, most overdue first.
CREATE INDEX schedules_due ON {{schema}}.schedules (wake_at, id) WHERE NOT paused AND wake_at IS NOT NULL;
CREATE INDEX schedules_workflow ON {{schema}}.schedules (workflow, id);

-- EXPLAIN (ANALYZE), PostgreSQL 15, after VACUUM ANALYZE, 200,000 instances (70% finished, 10%
-- sleeping until tomorrow, 10% waiting for a signal, 5% due now, 5% running) and 50,000 signals:
--
-- claim() of 10, the worker running 21 workflow versions, 10,000 due:
--   Index Scan using instances_due  Index Cond: (wake_at <= $now AND workflow >= .. AND workflow <= ..
--   AND version >= .. AND version <= ..) -> LockRows -> Limit: 10 rows in 0.2 ms; the lapsed-lease part
--   is an Index Scan using instances_leased_until (lease_until < $now) with no rows; 1.2 ms in all.
--   The 10,000 running instances are in neither index.
-- claim() by a worker with nothing due while 10,000 instances of other workflows are: the same scan
--   rejects them on its index conditions, without heap access: 1.8 ms.
-- signal() wake-up: Bitmap Index Scan on instances_waits (wait_topics @> ARRAY[$topic]) -> Bitmap
--   Heap Scan, recheck status = 'suspended': 0.02 ms; 0.25 ms for the whole statement.
-- write() release with waits: Index Scan using instances_pkey; the "signal above the cursor" check
--   is an Index Only Scan on signals_topic (topic = ANY($topics) AND id > $cursor).
-- signals(): Index Scan using signals_topic (topic = $1 AND id > $2 AND id <= $3).
-- purge(): Index Scan using instances_finished (updated_at < $before), then instances_pkey per row;
--   signals by signals_pkey (id < max(id)).
