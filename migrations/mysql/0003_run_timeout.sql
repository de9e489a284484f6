-- @nestjs/workflows, MySQL / MariaDB, migration 0003: the run timeout an instance was started with
-- (PostgreSQL's 0006).
--
-- `deadline` is when an instance's run timeout passes, counted from its start: its creation, or
-- the later `startAt` it was started with, which is not stored. `retry()` gives the retried
-- instance a run timeout of the same length from the retry, so it needs that length:
-- `run_timeout`, in milliseconds, NULL when the instance has none. Before, a retry took
-- `deadline - created_at`, which for an instance started with `startAt` is longer by the wait
-- before its start. Instances created before this migration have NULL there, and a retry of one
-- still counts from `created_at`. A nullable column without a default, added last: MySQL 8.0 and
-- MariaDB 10.6 add it in place, without copying the table. As in 0002, the migration runner looks
-- the column up in information_schema first, so a run stopped before its record resumes.

ALTER TABLE `{{schema}}_instances` ADD COLUMN run_timeout BIGINT NULL;
