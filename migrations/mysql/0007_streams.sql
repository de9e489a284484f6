-- @nestjs/workflows, MySQL / MariaDB, migration 0007: streams (`ctx.stream()`, `client.readStream()`).
--
-- One row per stream, locked by every append (an upsert, so the lock is exclusive from the start:
-- a shared lock upgraded later deadlocks two appenders): seqs are drawn under it, so items commit
-- in seq order and a reader resuming after seq N never misses one below it. The counters bound the
-- stream. Both tables go with their instance (ON DELETE CASCADE); an append racing a delete waits
-- for it on the foreign key, then fails and stores nothing. Names are VARCHAR(255): the items'
-- primary key (instance_id, name, seq) is 2,048 bytes of the 3,072 an index entry may hold.

CREATE TABLE IF NOT EXISTS `{{schema}}_streams` (
  instance_id VARCHAR(255) NOT NULL,
  name        VARCHAR(255) NOT NULL,
  last_seq    BIGINT NOT NULL DEFAULT 0,
  value_count BIGINT NOT NULL DEFAULT 0,
  bytes       BIGINT NOT NULL DEFAULT 0,
  closed      TINYINT(1) NOT NULL DEFAULT 0,
  PRIMARY KEY (instance_id, name),
  CONSTRAINT `{{schema}}_streams_instance` FOREIGN KEY (instance_id) REFERENCES `{{schema}}_instances` (id) ON DELETE CASCADE
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_bin;

-- kind 'value' or 'discard' (a failed step attempt's values are void). body_index: a write of the
-- workflow body, unique per stream, so a replay stores it once (NULLs, a step's writes, never conflict).
CREATE TABLE IF NOT EXISTS `{{schema}}_stream_items` (
  instance_id VARCHAR(255) NOT NULL,
  name        VARCHAR(255) NOT NULL,
  seq         BIGINT NOT NULL,
  kind        VARCHAR(8) NOT NULL,
  value       LONGTEXT NULL,
  body_index  INT NULL,
  step        VARCHAR(512) NULL,
  attempt     INT NULL,
  created_at  BIGINT NOT NULL,
  PRIMARY KEY (instance_id, name, seq),
  UNIQUE KEY stream_items_body (instance_id, name, body_index),
  CONSTRAINT `{{schema}}_stream_items_stream` FOREIGN KEY (instance_id, name)
    REFERENCES `{{schema}}_streams` (instance_id, name) ON DELETE CASCADE
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_bin;
