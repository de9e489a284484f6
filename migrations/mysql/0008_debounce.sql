-- @nestjs/workflows, MySQL / MariaDB, migration 0008: debounced starts (`start(..., { debounce })`).
--
-- One row per workflow name and debounce key: the instance the last debounced start of that key
-- created, and when its burst began (`first_at`, which `maxWait` counts from). A debounced start
-- upserts the row first (INSERT ... ON DUPLICATE KEY UPDATE), which takes its exclusive lock until
-- commit, so two starts of one key, from any processes, take turns: the second sees the instance
-- the first made and updates it while it has not started, instead of making another. A row
-- outlives its instance (a purge leaves it): the next start of the key then makes a new one.

CREATE TABLE IF NOT EXISTS `{{schema}}_debounce_keys` (
  workflow     VARCHAR(255) NOT NULL,
  debounce_key VARCHAR(255) NOT NULL,
  instance_id  VARCHAR(255) NOT NULL,
  first_at     BIGINT NOT NULL,
  PRIMARY KEY (workflow, debounce_key)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_bin;
