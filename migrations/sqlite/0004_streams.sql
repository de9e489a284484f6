-- @nestjs/workflows, SQLite, migration 0004: streams (`ctx.stream()`, `client.readStream()`).
--
-- One row per stream with its last seq and counters (the stream's limits), and its items. Every
-- append is a write transaction, serialized by the file's write lock, so seqs commit in order and a
-- reader resuming after seq N never misses one below it. A delete or purge of the instance deletes
-- both (sqlite-journal.ts), in the transaction that deletes the instance.
CREATE TABLE "{{schema}}_streams" (
  instance_id TEXT NOT NULL,
  name        TEXT NOT NULL,
  last_seq    INTEGER NOT NULL DEFAULT 0,
  value_count INTEGER NOT NULL DEFAULT 0,
  bytes       INTEGER NOT NULL DEFAULT 0,
  closed      INTEGER NOT NULL DEFAULT 0,
  PRIMARY KEY (instance_id, name)
) WITHOUT ROWID;

-- body_index: a write of the workflow body, unique per stream, so a replay stores it once (NULLs,
-- a step's writes, never conflict).
CREATE TABLE "{{schema}}_stream_items" (
  instance_id TEXT NOT NULL,
  name        TEXT NOT NULL,
  seq         INTEGER NOT NULL,
  kind        TEXT NOT NULL,
  value       TEXT,
  body_index  INTEGER,
  step        TEXT,
  attempt     INTEGER,
  created_at  INTEGER NOT NULL,
  PRIMARY KEY (instance_id, name, seq),
  UNIQUE (instance_id, name, body_index)
) WITHOUT ROWID;
