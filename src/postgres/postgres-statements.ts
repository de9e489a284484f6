import { quoteIdentifier } from '../sql/schema-name.js';
import { CANCELLABLE, UNFINISHED } from '../sql/status-lists.js';

/** An instance's columns as `toInstance()` reads them (JSON as text, so it parses exactly what was stored). */
export function instanceColumns(alias?: string): string {
  const a = alias ? `${alias}.` : '';
  return (
    `${a}id, ${a}workflow, ${a}version, ${a}status, ${a}input::text AS input, ${a}output::text AS output, ` +
    `${a}error::text AS error, ${a}custom_status::text AS custom_status, ${a}parent_id, ${a}parent_close, ` +
    `${a}concurrency_key, ${a}rate_limit_key, ${a}priority, ${a}schedule_id, ${a}scheduled_at, ${a}deadline, ` +
    `${a}wake_at, ${a}runs, ${a}signal_cursor, ${a}lease_token, ${a}lease_owner, ${a}lease_until, ` +
    `${a}cancel_requested, ${a}terminate_requested, ${a}cancel_reason, ${a}trace_context::text AS trace_context, ` +
    `${a}run_timeout, ${a}created_at, ${a}updated_at`
  );
}

/**
 * The suffix that makes a schema's wake-up channel its ends' channel (`<schema>_wake_ended`). Ends
 * have a channel of their own so that only processes where a `handle.result()` waits hear them:
 * every worker LISTENs to the wake-up channel, and would otherwise receive one notification per
 * finished instance of the schema.
 */
export const ENDS_CHANNEL_SUFFIX = '_ended';

/**
 * Notifies the id of the instance in `idColumn`, which ended, on the ends' channel of the wake-up
 * channel in `channelParam` (`ENDS_CHANNEL_SUFFIX`), for `listenForEnds()`.
 *
 * Used only where the row's `notify_end` (migration 0005), read from the row version the end's
 * UPDATE locked and wrote, is set: an end that nobody asked for notifies nothing, and so does not
 * take PostgreSQL's notification lock, which is one for the whole server and held through the
 * commit. Why an end and the `requestEndNotice` of a waiting `handle.result()` cannot miss each
 * other: both are UPDATEs of the one instance row, so they take its row lock one after the other,
 * and an UPDATE that waited for the lock re-reads the newest committed version of the row and checks
 * its conditions again on it (READ COMMITTED's re-check).
 * - The request locks first: it commits `notify_end = true` while the instance is unfinished; the
 *   end then updates that version, finds the flag set and notifies at its commit, which comes after
 *   the request's, itself after the waiter's LISTEN: the waiter hears it.
 * - The end locks first: the request waits for the end's commit, then finds the row finished, no
 *   longer matching `status IN (unfinished)`, updates nothing and says so; the waiter reads the
 *   instance (its read comes after that commit) and finds it ended.
 * No third order exists, whichever statement's snapshot came first.
 */
export function notifyEnded(channelParam: string, idColumn: string): string {
  return `(SELECT true FROM pg_notify(${channelParam} || '${ENDS_CHANNEL_SUFFIX}', ${idColumn}))`;
}

/** `(SELECT true FROM pg_notify(...))` as a value: inside a CASE it notifies only when the case holds. */
export function notify(channelParam: string): string {
  return `(SELECT true FROM pg_notify(${channelParam}, ''))`;
}

/**
 * Notifies `due:<id>` (`DUE_PREFIX`): the one instance in `idColumn` became due and holds no lease
 * (a start, a hand-back due now), so a worker that hears it may claim that instance by its id
 * (`claimByIds`).
 */
export function notifyDue(channelParam: string, idColumn: string): string {
  return `(SELECT true FROM pg_notify(${channelParam}, 'due:' || ${idColumn}))`;
}

/**
 * Notifies `cancel:<id>` (`CANCEL_PREFIX`): a cancel or terminate of the instance in `idColumn` was
 * stored, so the worker holding its lease reads the flags at once (it renews that lease now), and
 * every worker looks for work, as for `''` (a suspended instance is due now). Sent at the commit of
 * the request, so a renewal that follows it reads the flags.
 */
export function notifyCancel(channelParam: string, idColumn: string): string {
  return `(SELECT true FROM pg_notify(${channelParam}, 'cancel:' || ${idColumn}))`;
}

/**
 * The journal upsert of `reopen` and `write`, as a CTE after `target` (the instance row they
 * updated, its `journal_seq` already raised by the entry count): new names take the next `seq`s in
 * array order, so the journal keeps first-write order; an existing name keeps its `seq` and gets
 * the new entry whole.
 */
export function journalUpsert(s: string, entries: string, count: string): string {
  return `entries AS (
  INSERT INTO ${s}.journal (instance_id, name, seq, entry)
  SELECT t.id, e.value ->> 'name', t.journal_seq - ${count} + e.ordinality, e.value
  FROM target t, json_array_elements(${entries}::json) WITH ORDINALITY AS e
  ON CONFLICT (instance_id, name) DO UPDATE SET entry = EXCLUDED.entry
)`;
}

/**
 * The store's statements for one schema, built once. Statement text holds only constants and the
 * quoted schema; every value is a parameter. Where a statement notifies listeners it calls
 * `pg_notify()` in its own transaction, so the notification goes out only if that commits.
 */
export function postgresStatements(schemaName: string) {
  const s = quoteIdentifier(schemaName);

  const cancel = (condition: string, flags: string) => `UPDATE ${s}.instances SET ${flags}, cancel_reason = $2,
  wake_at = CASE WHEN wake_at IS NOT NULL AND wake_at <= $3 THEN wake_at ELSE $3 END, updated_at = $3
WHERE id = $1 AND ${condition}
RETURNING ${notifyCancel('$4', 'id')} AS notified`;

  return {
    /** The wake-ups' LISTEN/NOTIFY channel: one per schema. */
    channel: `${schemaName}_wake`,
    /** The ends' channel (`notifyEnded()`): one per schema. */
    endsChannel: `${schemaName}_wake${ENDS_CHANNEL_SUFFIX}`,
    /** $1 topic: takes the topic's signal lock exclusively until the transaction ends (see migration 0003). */
    lockTopic: `SELECT true AS locked FROM pg_advisory_xact_lock(${s}.topic_lock($1))`,
    /**
     * $1 topic: whether this session still holds the topic's exclusive lock after the statement that
     * took it, i.e. whether that statement ran inside a transaction block.
     */
    topicLockHeld: `SELECT EXISTS (SELECT 1 FROM pg_locks WHERE locktype = 'advisory' AND pid = pg_backend_pid() AND granted
  AND mode = 'ExclusiveLock' AND objsubid = 1 AND ((classid::bigint << 32) | objid::bigint) = ${s}.topic_lock($1)) AS held`,

    /**
     * $1 id, $2 workflow, $3 version, $4 input, $5 parent id, $6 parent close, $7 concurrency key,
     * $8 rate-limit key, $9 priority, $10 schedule id, $11 scheduled at, $12 deadline, $13 wake at,
     * $14 now, $15-$17 the lease it starts with (token, owner, until) or NULLs, $18 trace context,
     * $19 run timeout, $20 channel (`newInstanceParams()` and the channel). The new row
     * (`created`), or the existing one, or no row when a concurrent create committed after this
     * statement's snapshot (read it again).
     */
    create: `WITH inserted AS (
  INSERT INTO ${s}.instances (id, workflow, version, status, input, parent_id, parent_close, concurrency_key,
    rate_limit_key, priority, schedule_id, scheduled_at, deadline, wake_at, signal_cursor, created_at, updated_at,
    runs, lease_token, lease_owner, lease_until, trace_context, run_timeout)
  VALUES ($1, $2, $3, CASE WHEN $15::text IS NULL THEN 'pending' ELSE 'running' END, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13,
    (SELECT coalesce(max(id), 0) FROM ${s}.signals), $14, $14,
    CASE WHEN $15::text IS NULL THEN 0 ELSE 1 END, $15, $16, $17, $18::json, $19)
  ON CONFLICT (id) DO NOTHING
  RETURNING ${instanceColumns()}
)
SELECT true AS created, n.*, CASE WHEN n.wake_at <= $14 AND n.lease_token IS NULL THEN ${notifyDue('$20', 'n.id')} END AS notified FROM inserted n
UNION ALL
SELECT false, ${instanceColumns('e')}, NULL FROM ${s}.instances e WHERE e.id = $1 AND NOT EXISTS (SELECT 1 FROM inserted)`,

    /**
     * $1 now, $2 cap: due instances without a lease (instances_due) and with a lapsed one
     * (instances_leased_until), each part stopping at the cap so a large backlog costs no more.
     */
    countDue: `SELECT least($2::int, (SELECT count(*) FROM (SELECT 1 FROM ${s}.instances
    WHERE status IN ${UNFINISHED} AND wake_at IS NOT NULL AND lease_token IS NULL AND wake_at <= $1 LIMIT $2) a)
  + (SELECT count(*) FROM (SELECT 1 FROM ${s}.instances
    WHERE lease_token IS NOT NULL AND lease_until < $1 AND status IN ${UNFINISHED} AND wake_at <= $1 LIMIT $2) b))::int AS due`,

    /**
     * $1 dueBefore, $2 declared names, $3 their versions, $4 cap: countUndeclaredDue(). Due
     * instances without a lease (instances_due) and with one lapsed before $1 (instances_leased_until),
     * of pairs not declared, each part stopping at the cap; grouped per pair.
     */
    countUndeclaredDue: `SELECT workflow, version, count(*)::int AS count FROM (SELECT * FROM (
  (SELECT workflow, version FROM ${s}.instances i
    WHERE status IN ${UNFINISHED} AND wake_at IS NOT NULL AND lease_token IS NULL AND wake_at <= $1
      AND NOT EXISTS (SELECT 1 FROM unnest($2::text[], $3::integer[]) AS p(n, v) WHERE p.n = i.workflow AND p.v = i.version) LIMIT $4)
  UNION ALL
  (SELECT workflow, version FROM ${s}.instances i
    WHERE lease_token IS NOT NULL AND lease_until < $1 AND status IN ${UNFINISHED} AND wake_at <= $1
      AND NOT EXISTS (SELECT 1 FROM unnest($2::text[], $3::integer[]) AS p(n, v) WHERE p.n = i.workflow AND p.v = i.version) LIMIT $4)
) due LIMIT $4) capped GROUP BY workflow, version ORDER BY workflow, version`,

    /** $1 the store's instances table as `schema.instances`: whether this connection's database has it. */
    schemaExists: `SELECT to_regclass($1::text) IS NOT NULL AS found`,

    /** $1 id. */
    getInstance: `SELECT ${instanceColumns()}, wait_topics FROM ${s}.instances WHERE id = $1`,

    /** $1 id: the instance, its waits and its journal (a JSON array in first-write order), in one snapshot. */
    getInstanceWithJournal: `SELECT ${instanceColumns('i')}, i.wait_topics,
  (SELECT json_agg(j.entry ORDER BY j.seq)::text FROM ${s}.journal j WHERE j.instance_id = i.id) AS journal
FROM ${s}.instances i WHERE i.id = $1`,

    /** The start of `list()`; the store appends its filters, order and page. */
    listPrefix: `SELECT ${instanceColumns()} FROM ${s}.instances`,

    /** $1 id, $2 reason, $3 now, $4 channel. */
    requestCancel: cancel(`status IN ${CANCELLABLE} AND NOT cancel_requested`, 'cancel_requested = true'),
    /** $1 id, $2 reason, $3 now, $4 channel. */
    requestTerminate: cancel(
      `status IN ${UNFINISHED} AND NOT terminate_requested`,
      'cancel_requested = true, terminate_requested = true',
    ),

    /**
     * $1 id, $2 now, $3 channel: asks that the instance's end be notified (`notifyEnded()`), while it
     * is unfinished. One row when it is; none when it is finished or unknown (then no notification
     * will come).
     *
     * Committed without waiting for the WAL flush (`synchronous_commit` off for this transaction
     * alone), so the row lock is held for microseconds, not through an fsync: a claim that meets
     * the locked row passes over it (SKIP LOCKED), and a result() awaited just after its start asks
     * while workers claim that very instance. Nothing depends on the flag outliving a server crash:
     * the LISTEN connection does not either, and a result() asks again after it reconnects. A later
     * commit that waits for its flush (the end's) flushes this one too.
     *
     * Passed over, a due instance could stay unclaimed: the wake-up that named it was spent on the
     * claim that skipped it, and the next comes with the poll (an hour away, if so configured). So
     * when the row it locked is due and free (no lease, `wake_at` reached), the ask names it again
     * (`due:<id>`), sent at its commit, once the row lock is gone: a claim that skipped the row
     * while the ask held it hears that and claims again. Only then: an ask on a leased, sleeping or
     * waiting instance notifies nothing, so asks add no notifying commits while instances run.
     */
    requestEndNotice: `UPDATE ${s}.instances SET notify_end = set_config('synchronous_commit', 'off', true) IS NOT NULL
WHERE id = $1 AND status IN ${UNFINISHED}
RETURNING true AS requested, CASE WHEN lease_token IS NULL AND wake_at <= $2 THEN ${notifyDue('$3', 'id')} END AS woke`,

    /**
     * $1 name, $2 key, $3 topic, $4 dedupe id, $5 payload, $6 now, $7 channel. One row: the new
     * signal (`created`, with how many it woke) or, on a dedupe hit, the earlier one. The function
     * takes the topic's lock and reads after it (migration 0003), all in this one statement.
     */
    sendSignal: `SELECT id, key, created, woken FROM ${s}.send_signal($1, $2, $3, $4, $5, $6, $7)`,

    /** $1 topic, $2 after id, $3 up to id: waits for a signal of the topic still being sent. */
    signals: `SELECT id, name, key, payload, created_at FROM ${s}.read_signals($1, $2, $3)`,

    /** $1 id, $2 token, $3 lease until. */
    renew: `UPDATE ${s}.instances SET lease_until = $3 WHERE id = $1 AND lease_token = $2
RETURNING cancel_requested, terminate_requested`,
  };
}

/** What `postgresStatements()` builds. */
export type PostgresStatements = ReturnType<typeof postgresStatements>;
