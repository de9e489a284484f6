-- @nestjs/workflows, PostgreSQL, migration 0009: streams (`ctx.stream()`, `client.readStream()`).
--
-- One row per stream, locked by every append: seqs are drawn under that lock, so items commit in
-- seq order and a reader resuming after seq N never misses one below it. The counters bound the
-- stream (its limits are beside the journal's). Both tables go with their instance (ON DELETE
-- CASCADE), and an append racing a delete waits for it on the foreign key, then finds it gone.
CREATE TABLE {{schema}}.streams (
  instance_id text COLLATE "C" NOT NULL,
  name        text COLLATE "C" NOT NULL,
  last_seq    bigint NOT NULL DEFAULT 0,
  value_count bigint NOT NULL DEFAULT 0,
  bytes       bigint NOT NULL DEFAULT 0,
  closed      boolean NOT NULL DEFAULT false,
  CONSTRAINT streams_pkey PRIMARY KEY (instance_id, name),
  CONSTRAINT streams_instance_fkey FOREIGN KEY (instance_id) REFERENCES {{schema}}.instances (id) ON DELETE CASCADE
);

-- kind 'value' or 'discard' (a failed step attempt's values are void). body_index: a write of the
-- workflow body, unique per stream, so a replay stores it once (NULLs, a step's writes, never conflict).
CREATE TABLE {{schema}}.stream_items (
  instance_id text COLLATE "C" NOT NULL,
  name        text COLLATE "C" NOT NULL,
  seq         bigint NOT NULL,
  kind        text NOT NULL,
  value       json,
  body_index  integer,
  step        text COLLATE "C",
  attempt     integer,
  created_at  bigint NOT NULL,
  CONSTRAINT stream_items_pkey PRIMARY KEY (instance_id, name, seq),
  CONSTRAINT stream_items_body_key UNIQUE (instance_id, name, body_index),
  CONSTRAINT stream_items_kind_check CHECK (kind IN ('value', 'discard')),
  CONSTRAINT stream_items_stream_fkey FOREIGN KEY (instance_id, name)
    REFERENCES {{schema}}.streams (instance_id, name) ON DELETE CASCADE
);
