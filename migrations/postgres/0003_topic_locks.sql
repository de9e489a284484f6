-- @nestjs/workflows, PostgreSQL, migration 0003: signals ordered per topic, not per schema.
--
-- 0001 ordered every signal after every suspension of the schema with one advisory lock, taken in
-- transactions that spanned client round trips: a stalled holder stalled every signal and every
-- suspension. Here a signal and a suspension conflict only when they can match, on their topic
-- (signal name and exact key), and each lock lives inside one statement, taken by the functions
-- below. Their statements run as PL/pgSQL queries, each with a snapshot taken after the lock was
-- granted (a VOLATILE function's queries do not reuse the caller's snapshot): that is what lets one
-- client statement lock and then read what committed before the lock.
--
-- The rules they keep, for a topic T:
-- - send_signal() takes T's lock exclusively, then draws the id, stores the signal and wakes the
--   instances suspended on T. An id is drawn only under T's lock, so a signal of T whose id is at
--   or below an id a reader saw either committed already or still holds T's lock.
-- - read_signals() takes T's lock shared before reading: it waits for such a signal to commit (or
--   roll back), so a reader that saw id N sees every signal of T up to N.
-- - signals_pending() (a suspension's "a signal above my cursor matches a new wait") takes the
--   lock of each of its topics shared before reading: a signal of T either committed before and is
--   seen, or waits for the suspension to commit and then wakes it.

-- Signal ids: drawn under the topic's lock, never reused. Gaps (a rolled-back signal, a lost dedupe
-- race) are harmless: readers ask for ranges.
CREATE SEQUENCE {{schema}}.signal_ids AS bigint;
SELECT setval('{{schema}}.signal_ids', coalesce(max(id), 0) + 1, false) FROM {{schema}}.signals;

-- The advisory lock key of a topic in this schema (other schemas' topics don't share it).
CREATE FUNCTION {{schema}}.topic_lock(topic text) RETURNS bigint
  LANGUAGE sql IMMUTABLE PARALLEL SAFE
  AS $fn$ SELECT hashtextextended('{{schema}}:' || topic, 0) $fn$;

-- signal(): one row, the new signal (created, with how many it woke) or, when (name, dedupe_id)
-- was stored before, the earlier one (not created, woke none).
CREATE FUNCTION {{schema}}.send_signal(
  p_name text, p_key text, p_topic text, p_dedupe text, p_payload json, p_now bigint, p_channel text
) RETURNS TABLE (id bigint, key text, created boolean, woken integer)
  LANGUAGE plpgsql VOLATILE
  AS $fn$
#variable_conflict use_column
DECLARE
  v_id bigint;
  v_woken integer;
BEGIN
  PERFORM pg_advisory_xact_lock({{schema}}.topic_lock(p_topic));
  IF p_dedupe IS NOT NULL THEN
    -- A repeat draws no id. The unique key still decides a race with a sender of another key
    -- (another topic, so another lock): below, the loser's insert waits for the winner and ignores.
    RETURN QUERY SELECT e.id, e.key::text, false, 0 FROM {{schema}}.signals e WHERE e.name = p_name AND e.dedupe_id = p_dedupe;
    IF FOUND THEN RETURN; END IF;
  END IF;
  INSERT INTO {{schema}}.signals AS s (id, name, key, topic, dedupe_id, payload, created_at)
  VALUES (nextval('{{schema}}.signal_ids'), p_name, p_key, p_topic, p_dedupe, p_payload, p_now)
  ON CONFLICT (name, dedupe_id) DO NOTHING
  RETURNING s.id INTO v_id;
  IF v_id IS NULL THEN
    -- This query's snapshot is newer than the insert's wait: it sees the winner.
    RETURN QUERY SELECT e.id, e.key::text, false, 0 FROM {{schema}}.signals e WHERE e.name = p_name AND e.dedupe_id = p_dedupe;
    RETURN;
  END IF;
  UPDATE {{schema}}.instances i
  SET wake_at = CASE WHEN i.wake_at IS NOT NULL AND i.wake_at <= p_now THEN i.wake_at ELSE p_now END, updated_at = p_now
  WHERE i.status = 'suspended' AND i.wait_topics @> ARRAY[p_topic];
  GET DIAGNOSTICS v_woken = ROW_COUNT;
  IF v_woken > 0 THEN
    PERFORM pg_notify(p_channel, '');
  END IF;
  RETURN QUERY SELECT v_id, p_key, true, v_woken;
END
$fn$;

-- signals(): the signals of a topic with p_after < id <= p_up_to, in id order.
CREATE FUNCTION {{schema}}.read_signals(p_topic text, p_after bigint, p_up_to bigint)
RETURNS TABLE (id bigint, name text, key text, payload text, created_at bigint)
  LANGUAGE plpgsql VOLATILE
  AS $fn$
#variable_conflict use_column
BEGIN
  PERFORM pg_advisory_xact_lock_shared({{schema}}.topic_lock(p_topic));
  RETURN QUERY SELECT s.id, s.name::text, s.key::text, s.payload::text, s.created_at FROM {{schema}}.signals s
  WHERE s.topic = p_topic AND s.id > p_after AND s.id <= p_up_to ORDER BY s.id;
END
$fn$;

-- write() with waits: whether a signal above p_cursor matches one of p_topics. Locks in one order,
-- so two suspensions never wait for each other (shared locks don't conflict anyway).
CREATE FUNCTION {{schema}}.signals_pending(p_topics text[], p_cursor bigint) RETURNS boolean
  LANGUAGE plpgsql VOLATILE
  AS $fn$
DECLARE
  v_key bigint;
BEGIN
  FOR v_key IN SELECT DISTINCT {{schema}}.topic_lock(t) FROM unnest(p_topics) AS t ORDER BY 1 LOOP
    PERFORM pg_advisory_xact_lock_shared(v_key);
  END LOOP;
  RETURN EXISTS (SELECT 1 FROM {{schema}}.signals g WHERE g.topic = ANY(p_topics) AND g.id > p_cursor);
END
$fn$;
