-- @nestjs/workflows, MySQL / MariaDB, migration 0002: the trace context an instance's creator passed
-- on, and list() by status and by workflow in created order (PostgreSQL's 0004 and 0002).
--
-- trace_context: the W3C trace context headers of whoever started the instance (the start()
-- caller, or the parent starting a child) as JSON text ({"traceparent": "00-...", "tracestate":
-- "..."}); every execution's spans join that trace, whichever process runs it. NULL: none
-- (telemetry off, or instances created before this migration). A nullable column without a
-- default (LONGTEXT, as every payload): MySQL 8.0 and MariaDB 10.6 add it in place, without
-- copying the table.
--
-- The dashboard lists instances newest first, filtered, and pages by keyset position
-- ((created_at, id) past the last row shown). With these two indexes, a filter on one status or on
-- a workflow reads just the page it shows, however rare the matching rows are; without them such
-- a page walked instances_created and skipped every row that did not match. They are built online
-- (writes go on while they build); each costs a status change or a create one more index entry.
--
-- These statements can't say IF NOT EXISTS on both servers (MySQL 8.0 lacks it for columns and
-- indexes), so the migration runner looks each column or index up in information_schema first and
-- only records one that is there already: a run stopped between a statement and its record
-- resumes. `nest-workflows sql --mysql` prints each with the same check, as a prepared statement.

ALTER TABLE `{{schema}}_instances` ADD COLUMN trace_context LONGTEXT NULL;
CREATE INDEX instances_status_created ON `{{schema}}_instances` (status, created_at, id);
CREATE INDEX instances_workflow_created ON `{{schema}}_instances` (workflow, created_at, id);
