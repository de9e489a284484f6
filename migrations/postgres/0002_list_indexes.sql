-- @nestjs/workflows, PostgreSQL, migration 0002: list() by status and by workflow, in created order.
--
-- The dashboard lists instances newest first, filtered, and pages by keyset position
-- ((created_at, id) below the last row shown). With these, a filter on one status or on a workflow
-- reads just the page it shows, however rare the matching rows are among the others; without them
-- such a page walked instances_created and skipped every row that did not match.
--
-- They cost each status change one more index entry. Writes already change `status`, `wake_at` and
-- `lease_token`, which instances_due's predicate names, so they were not HOT updates before either.

CREATE INDEX instances_status_created ON {{schema}}.instances (status, created_at, id);
CREATE INDEX instances_workflow_created ON {{schema}}.instances (workflow, created_at, id);
