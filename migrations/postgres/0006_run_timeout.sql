-- @nestjs/workflows, PostgreSQL, migration 0006: the run timeout an instance was started with.
--
-- `deadline` is when an instance's run timeout passes, counted from its start: its creation, or
-- the later `startAt` it was started with, which is not stored. `retry()` gives the retried
-- instance a run timeout of the same length from the retry, so it needs that length:
-- `run_timeout`, in milliseconds, NULL when the instance has none. Before, a retry took
-- `deadline - created_at`, which for an instance started with `startAt` is longer by the wait
-- before its start. Instances created before this migration have NULL there, and a retry of one
-- still counts from `created_at`. Adding a nullable column without a default rewrites nothing.

ALTER TABLE {{schema}}.instances ADD COLUMN run_timeout bigint;
