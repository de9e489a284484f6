-- @nestjs/workflows, SQLite, migration 0003: where a forked instance came from (PostgreSQL's 0008).
--
-- `client.fork(id, { fromStep })` makes a new instance whose journal is a copy of the source's up
-- to that step; `getStatus()` of the fork shows `forkedFrom: { id, step }`. `forked_from` is the
-- source's id, `forked_from_step` the step it was forked from (NULL: from the top); both NULL for an
-- instance that is no fork.

ALTER TABLE "{{schema}}_instances" ADD COLUMN forked_from TEXT;
ALTER TABLE "{{schema}}_instances" ADD COLUMN forked_from_step TEXT;
