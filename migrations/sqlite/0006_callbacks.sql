-- @nestjs/workflows, SQLite, migration 0006: callbacks (`ctx.createCallback()`,
-- `client.completeCallback()`).
--
-- One row per instance and callback name, found by the SHA-256 of its token (no usable token is
-- stored). `state` moves only from 'open', by one conditional UPDATE each for a completion, a
-- failure and the timeout, so of any two exactly one lands. A delete or purge of the instance
-- deletes its callbacks (sqlite-journal.ts).
CREATE TABLE "{{schema}}_callbacks" (
  instance_id TEXT NOT NULL,
  name        TEXT NOT NULL,
  token_hash  TEXT NOT NULL UNIQUE,
  state       TEXT NOT NULL DEFAULT 'open',
  payload     TEXT,
  expires_at  INTEGER,
  created_at  INTEGER NOT NULL,
  settled_at  INTEGER,
  PRIMARY KEY (instance_id, name)
) WITHOUT ROWID;
