-- @nestjs/workflows, SQLite, migration 0005: debounced starts (`start(..., { debounce })`) and fair claims.
--
-- One row per workflow name and debounce key: the instance the last debounced start of that key
-- created, and when its burst began (`first_at`, which `maxWait` counts from). A debounced start
-- reads and writes it in its BEGIN IMMEDIATE transaction, under the file's one write lock, so two
-- starts of one key never both create. A row outlives its instance (a purge leaves it): the next
-- start of the key then makes a new one.

CREATE TABLE "{{schema}}_debounce_keys" (
  workflow    TEXT NOT NULL,
  key         TEXT NOT NULL,
  instance_id TEXT NOT NULL,
  first_at    INTEGER NOT NULL,
  PRIMARY KEY (workflow, key)
) WITHOUT ROWID;

-- Fair claims: what a claim may take someday per priority and concurrency key, in claim order, so
-- a claim finds each key's oldest due instances with one descent per key (instances_due keeps the
-- plain claim order). The keyless ones are there too (NULLs first), as one more group.
CREATE INDEX "{{schema}}_instances_due_key" ON "{{schema}}_instances" (priority, concurrency_key, wake_at, created_at, id)
  WHERE status IN ('pending', 'running', 'suspended', 'compensating') AND wake_at IS NOT NULL;
