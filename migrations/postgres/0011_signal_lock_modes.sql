-- @nestjs/workflows, PostgreSQL, migration 0011: signals never wait for each other, and a new
-- instance's signal cursor is the last id drawn.
--
-- 0003 took a topic's lock exclusively for each signal, until its transaction ended. Two
-- transactions that each sent signals of topics A and B, in opposite orders, deadlocked; so did one
-- that held A and waited for B while a suspension on both held B shared and waited for A. Here a
-- signal takes no topic lock another signal waits for, and a suspension never waits while it holds
-- one (two signals that wake the same instance still take turns on its row, as any updates do):
--
-- - A signal of topic T takes T's lock SHARED until its transaction ends (signals of T never wait
--   for each other), then waits, without keeping it, for the suspensions on T in progress: it takes
--   T's wait lock exclusively and gives it back in the same expression (signal_begin()).
-- - A suspension on T takes T's wait lock shared until it commits, then asks, without waiting,
--   whether a signal of T is in progress: it tries T's lock exclusively and gives it back in the
--   same expression. If one is, the suspension is due now (that signal may be for it); if none is,
--   any signal of T that starts later waits for the suspension to commit, then its wake-up sees the
--   new wait. Either way no wait is missed, and the suspension waited for nothing.
-- - A reader of T (signals()) takes T's lock exclusively for its statement: it waits for the
--   signals of T in progress, so a reader that saw id N sees every signal of T up to N.
--
-- A lock that is given back in the expression that took it is a session lock that no statement
-- ends between the two calls, so it never outlives them.

-- The wait lock's key of a topic (the suspensions' side; topic_lock() is the signals' side).
CREATE FUNCTION {{schema}}.topic_wait_lock(topic text) RETURNS bigint
  LANGUAGE sql IMMUTABLE PARALLEL SAFE
  AS $fn$ SELECT hashtextextended('{{schema}}:wait:' || topic, 0) $fn$;

-- What a signal of p_topic takes before it draws its id (see above); true.
CREATE FUNCTION {{schema}}.signal_begin(p_topic text) RETURNS boolean
  LANGUAGE plpgsql VOLATILE
  AS $fn$
BEGIN
  PERFORM pg_advisory_xact_lock_shared({{schema}}.topic_lock(p_topic));
  PERFORM pg_advisory_lock({{schema}}.topic_wait_lock(p_topic)), pg_advisory_unlock({{schema}}.topic_wait_lock(p_topic));
  RETURN true;
END
$fn$;

CREATE OR REPLACE FUNCTION {{schema}}.send_signal(
  p_name text, p_key text, p_topic text, p_dedupe text, p_payload json, p_now bigint, p_channel text
) RETURNS TABLE (id bigint, key text, created boolean, woken integer)
  LANGUAGE plpgsql VOLATILE
  AS $fn$
#variable_conflict use_column
DECLARE
  v_id bigint;
  v_woken integer;
BEGIN
  PERFORM {{schema}}.signal_begin(p_topic);
  IF p_dedupe IS NOT NULL THEN
    -- A repeat draws no id. The unique key decides a race between two senders (they no longer
    -- wait for each other's topic lock): below, the loser's insert waits for the winner and ignores.
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

CREATE OR REPLACE FUNCTION {{schema}}.read_signals(p_topic text, p_after bigint, p_up_to bigint)
RETURNS TABLE (id bigint, name text, key text, payload text, created_at bigint)
  LANGUAGE plpgsql VOLATILE
  AS $fn$
#variable_conflict use_column
BEGIN
  PERFORM pg_advisory_xact_lock({{schema}}.topic_lock(p_topic));
  RETURN QUERY SELECT s.id, s.name::text, s.key::text, s.payload::text, s.created_at FROM {{schema}}.signals s
  WHERE s.topic = p_topic AND s.id > p_after AND s.id <= p_up_to ORDER BY s.id;
END
$fn$;

-- write() with waits: whether a signal above p_cursor matches one of p_topics, or one of them is
-- being sent now. It takes shared wait locks only (which wait only for a signal's momentary
-- exclusive one) and tries the topic locks without waiting: it never waits while holding a lock a
-- signal needs.
CREATE OR REPLACE FUNCTION {{schema}}.signals_pending(p_topics text[], p_cursor bigint) RETURNS boolean
  LANGUAGE plpgsql VOLATILE
  AS $fn$
DECLARE
  v_topic text;
  v_pending boolean := false;
BEGIN
  FOR v_topic IN SELECT DISTINCT t FROM unnest(p_topics) AS t ORDER BY 1 LOOP
    PERFORM pg_advisory_xact_lock_shared({{schema}}.topic_wait_lock(v_topic));
  END LOOP;
  FOR v_topic IN SELECT DISTINCT t FROM unnest(p_topics) AS t LOOP
    IF NOT (pg_try_advisory_lock({{schema}}.topic_lock(v_topic)) AND pg_advisory_unlock({{schema}}.topic_lock(v_topic))) THEN
      v_pending := true;
    END IF;
  END LOOP;
  RETURN v_pending OR EXISTS (SELECT 1 FROM {{schema}}.signals g WHERE g.topic = ANY(p_topics) AND g.id > p_cursor);
END
$fn$;

-- A new instance's signal cursor: the last signal id drawn, whether its signal committed yet or
-- not. Ids are drawn when a signal is sent (its statement, or its call inside the application's
-- transaction), so an instance never takes a signal sent before it was created and takes every one
-- sent after, in whatever order they commit. (The highest committed id, used before, let a signal
-- drawn earlier but committed later be taken or not depending on other topics' signals.)
CREATE FUNCTION {{schema}}.last_signal_drawn() RETURNS bigint
  LANGUAGE sql VOLATILE
  AS $fn$ SELECT CASE WHEN is_called THEN last_value ELSE last_value - 1 END FROM {{schema}}.signal_ids $fn$;
