-- @nestjs/workflows, PostgreSQL, migration 0004: the trace context an instance's creator passed on.
--
-- The telemetry layer stores the W3C trace context headers of whoever started an instance (the
-- start() caller, or the parent starting a child) with the new instance, as a JSON object
-- ({"traceparent": "00-...", "tracestate": "..."}); every execution's spans join that trace,
-- whichever process runs it and however long the instance sleeps. NULL: none (telemetry off, or
-- instances created before this migration). Adding a nullable column without a default rewrites
-- nothing.

ALTER TABLE {{schema}}.instances ADD COLUMN trace_context json;
