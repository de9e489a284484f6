-- @nestjs/workflows, PostgreSQL, migration 0010: debounced starts (`start(..., { debounce })`).
--
-- One row per workflow name and debounce key: the instance the last debounced start of that key
-- created, and when its burst began (`first_at`, which `maxWait` counts from). A debounced start
-- upserts the row first (INSERT ... ON CONFLICT DO UPDATE), which locks it until commit, so two
-- starts of one key, from any processes, take turns: the second sees the instance the first made
-- and updates it while it has not started, instead of making another. A row outlives its
-- instance (a purge leaves it): the next start of the key finds the instance gone and makes a new one.

CREATE TABLE {{schema}}.debounce_keys (
  workflow    text COLLATE "C" NOT NULL,
  key         text COLLATE "C" NOT NULL,
  instance_id text COLLATE "C" NOT NULL,
  first_at    bigint NOT NULL,
  CONSTRAINT debounce_keys_pkey PRIMARY KEY (workflow, key)
);
