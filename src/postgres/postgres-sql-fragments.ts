/** An instance's columns as `toInstance()` reads them (JSON as text, so it parses exactly what was stored). */
export function instanceColumns(alias?: string): string {
  const a = alias ? `${alias}.` : '';
  return (
    `${a}id, ${a}workflow, ${a}version, ${a}status, ${a}input::text AS input, ${a}output::text AS output, ` +
    `${a}error::text AS error, ${a}custom_status::text AS custom_status, ${a}parent_id, ${a}parent_close, ` +
    `${a}concurrency_key, ${a}rate_limit_key, ${a}priority, ${a}schedule_id, ${a}scheduled_at, ${a}deadline, ` +
    `${a}wake_at, ${a}runs, ${a}signal_cursor, ${a}lease_token, ${a}lease_owner, ${a}lease_until, ` +
    `${a}cancel_requested, ${a}terminate_requested, ${a}cancel_reason, ${a}trace_context::text AS trace_context, ` +
    `${a}run_timeout, ${a}created_at, ${a}updated_at` +
    `, ${a}forked_from, ${a}forked_from_step`
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

/** The wake-ups' LISTEN/NOTIFY channel of a schema. */
export function wakeUpChannel(schema: string): string {
  return `${schema}_wake`;
}

/** The ends' channel of a schema (`notifyEnded()`). */
export function endsChannel(schema: string): string {
  return `${wakeUpChannel(schema)}${ENDS_CHANNEL_SUFFIX}`;
}
