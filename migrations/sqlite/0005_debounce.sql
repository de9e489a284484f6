-- @nestjs/workflows, SQLite, migration 0005: debounced starts (`start(..., { debounce })`).
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
