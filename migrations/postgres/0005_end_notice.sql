-- @nestjs/workflows, PostgreSQL, migration 0005: an instance's end is notified only when awaited.
--
-- An end used to pg_notify() its id on `<schema>_wake_ended` whether or not any process waited for
-- it. PostgreSQL queues a transaction's notifications under one lock for the whole server, held
-- until the commit is flushed, so notifying commits of the whole cluster go one after another.
-- `notify_end` is set by a `handle.result()` that must hear of the end from another process (after
-- it LISTENs), while the instance is unfinished; the write that ends the instance notifies only
-- when it finds the flag set on the row it locks. The flag is never cleared while the instance is
-- unfinished; `reopen` (retry) clears it, since nobody can still be waiting for an end that came.
-- Adding a column with a constant default rewrites nothing (PostgreSQL 11+).

ALTER TABLE {{schema}}.instances ADD COLUMN notify_end boolean NOT NULL DEFAULT false;
