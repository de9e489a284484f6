-- @nestjs/workflows, MySQL / MariaDB, migration 0009: callbacks (`ctx.createCallback()`,
-- `client.completeCallback()`).
--
-- One row per instance and callback name, found by the SHA-256 of its token (no usable token is
-- stored). `state` moves only from 'open', by one conditional UPDATE each for a completion, a
-- failure and the timeout, so of any two exactly one lands. Goes with its instance (ON DELETE CASCADE).

CREATE TABLE IF NOT EXISTS `{{schema}}_callbacks` (
  instance_id VARCHAR(255) NOT NULL,
  name        VARCHAR(255) NOT NULL,
  token_hash  CHAR(64) NOT NULL,
  state       VARCHAR(16) NOT NULL DEFAULT 'open',
  payload     LONGTEXT NULL,
  expires_at  BIGINT NULL,
  created_at  BIGINT NOT NULL,
  settled_at  BIGINT NULL,
  PRIMARY KEY (instance_id, name),
  UNIQUE KEY callbacks_token (token_hash),
  CONSTRAINT `{{schema}}_callbacks_instance` FOREIGN KEY (instance_id) REFERENCES `{{schema}}_instances` (id) ON DELETE CASCADE
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_bin;
