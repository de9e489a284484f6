-- @nestjs/workflows, PostgreSQL, migration 0013: callbacks (`ctx.createCallback()`,
-- `client.completeCallback()`).
--
-- One row per instance and callback name, found by the SHA-256 of its token (no usable token is
-- stored). `state` moves only from 'open', by one conditional UPDATE each for a completion, a
-- failure and the timeout, so of any two exactly one lands. Goes with its instance (ON DELETE CASCADE).
CREATE TABLE {{schema}}.callbacks (
  instance_id text COLLATE "C" NOT NULL,
  name        text COLLATE "C" NOT NULL,
  token_hash  text COLLATE "C" NOT NULL,
  state       text NOT NULL DEFAULT 'open',
  payload     json,
  expires_at  bigint,
  created_at  bigint NOT NULL,
  settled_at  bigint,
  CONSTRAINT callbacks_pkey PRIMARY KEY (instance_id, name),
  CONSTRAINT callbacks_token_key UNIQUE (token_hash),
  CONSTRAINT callbacks_state_check CHECK (state IN ('open', 'completed', 'failed', 'expired')),
  CONSTRAINT callbacks_instance_fkey FOREIGN KEY (instance_id) REFERENCES {{schema}}.instances (id) ON DELETE CASCADE
);
