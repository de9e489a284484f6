-- @nestjs/workflows, PostgreSQL, migration 0012: instances_due compares workflow names under "POSIX".
--
-- The claim bounds the workflow names it runs (`workflow >= min AND workflow <= max`) so that due
-- instances of other workflows are passed over inside instances_due. instances_workflow_created
-- (0002, for list()) leads with `workflow`, so the same bounds are an index condition there too, and
-- with statistics that make the name range look selective (a young table, a table that grew since
-- its last ANALYZE, a few workflows) the planner read every instance of the workflows, sleeping and
-- waiting ones included, and sorted them: the claim's cost grew with the fleet instead of with what
-- is due. The claim now compares names under "POSIX" (the same byte order as the column's "C"),
-- which only this index's `workflow` column has: no other index can serve those bounds.
-- Rebuilding the index takes a lock that holds writes to `instances` while it runs (0.6 s with
-- 100,000 unfinished instances, 5.5 s with 1,000,000, on a shared 2-core machine: bench/RESULTS.md
-- table 14).

DROP INDEX {{schema}}.instances_due;
CREATE INDEX instances_due ON {{schema}}.instances (priority, wake_at, created_at, id, workflow COLLATE "POSIX", version)
  WHERE status IN ('pending', 'running', 'suspended', 'compensating') AND wake_at IS NOT NULL AND lease_token IS NULL;
