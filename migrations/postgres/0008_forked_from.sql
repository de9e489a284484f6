-- @nestjs/workflows, PostgreSQL, migration 0008: where a forked instance came from.
--
-- `client.fork(id, { fromStep })` makes a new instance whose journal is a copy of the source's up
-- to that step; `getStatus()` of the fork shows `forkedFrom: { id, step }`. `forked_from` is the
-- source's id, `forked_from_step` the step it was forked from (NULL: from the top); both NULL for an
-- instance that is no fork. No foreign key: the source may be deleted or purged before its fork.
-- Nullable columns without a default rewrite nothing.

ALTER TABLE {{schema}}.instances ADD COLUMN forked_from text COLLATE "C";
ALTER TABLE {{schema}}.instances ADD COLUMN forked_from_step text COLLATE "C";
