-- @nestjs/workflows, PostgreSQL, migration 0010: debounced starts (`start(..., { debounce })`) and fair claims.
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

-- Fair claims: the due instances without a lease per priority and concurrency key, in claim order,
-- so a claim finds each key's oldest due instances with one descent per key (instances_due keeps
-- the plain claim order). The keyless ones are there too (NULLs last), as one more group. Workflow
-- names are under "POSIX", as the claim compares them (migration 0012 gives instances_due the same),
-- so the bounds on them are conditions on the index and due instances of other workflows are
-- passed over inside it.
CREATE INDEX instances_due_key ON {{schema}}.instances (priority, concurrency_key, wake_at, created_at, id, workflow COLLATE "POSIX", version)
  WHERE status IN ('pending', 'running', 'suspended', 'compensating') AND wake_at IS NOT NULL AND lease_token IS NULL;

-- The same entries for the instances that have a key, alone: the claim's loose scan finds the keys
-- here, so its descents never walk the keyless instances (in instances_due_key they sort after a
-- priority's keys, and a descent to the next priority's first key would read through all of them).
CREATE INDEX instances_due_keyed ON {{schema}}.instances (priority, concurrency_key, wake_at, created_at, id, workflow COLLATE "POSIX", version)
  WHERE status IN ('pending', 'running', 'suspended', 'compensating') AND wake_at IS NOT NULL AND lease_token IS NULL
    AND concurrency_key IS NOT NULL;
