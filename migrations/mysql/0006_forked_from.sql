-- @nestjs/workflows, MySQL / MariaDB, migration 0006: where a forked instance came from
-- (PostgreSQL's 0008).
--
-- `client.fork(id, { fromStep })` makes a new instance whose journal is a copy of the source's up
-- to that step; `getStatus()` of the fork shows `forkedFrom: { id, step }`. `forked_from` is the
-- source's id, `forked_from_step` the step it was forked from (NULL: from the top); both NULL for an
-- instance that is no fork. No foreign key: the source may be deleted or purged before its fork.
-- Nullable columns without a default, added last, in place; as in 0002, the migration runner looks
-- each column up in information_schema first, so a run stopped before its record resumes.

ALTER TABLE `{{schema}}_instances` ADD COLUMN forked_from VARCHAR(255) NULL;
ALTER TABLE `{{schema}}_instances` ADD COLUMN forked_from_step VARCHAR(512) NULL;
