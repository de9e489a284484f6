import { instanceColumns } from './postgres-sql-fragments.js';
import { UNFINISHED } from '../sql/status-lists.js';
import { quoteIdentifier } from '../sql/schema-name.js';
import { postgresUnpaused } from './postgres-pauses.js';

/** What puts an instance in `instances_due`: its predicate, literally, so the planner matches it. */
const inDueIndex = (alias: string) =>
  `${alias}.status IN ${UNFINISHED} AND ${alias}.wake_at IS NOT NULL AND ${alias}.lease_token IS NULL`;

/**
 * Bounds written as subqueries (`(SELECT ...)`): the planner can't fold them into the range, so a
 * generic plan on a young table still takes the range's index instead of reading the table.
 */
const MIN_BIGINT = `'-9223372036854775808'::bigint`;
const MAX_BIGINT = `'9223372036854775807'::bigint`;

/**
 * The due instances a claim may take, as two sets: `free` ones (no lease: the `instances_due`
 * index, walked one priority at a time, see `pickDue()`) and `lapsed` ones (a lease that ran out:
 * the small `instances_leased_until` index, bounded by `lease_until < now`). Running instances are
 * in neither index path, so a claim never wades through them. $1 now, $2 workflow names, $3 their
 * versions (pairwise); the exact pairs are checked on the row.
 *
 * For `free`, the ranges of names and versions are index conditions on `instances_due`'s trailing
 * columns, so due instances of workflows this worker doesn't run are passed over in the index. Those
 * bounds come from InitPlans, unknown when planning, so the planner estimates the name range at
 * 0.5% of the table and would rather read `instances_workflow_created` (every instance of the
 * workflow, sleeping ones too) whenever `wake_at <= now` looks less selective; the unknown lower
 * bound on `wake_at` (it holds for every row) makes the planner estimate that range the same way,
 * whatever the statistics, so `instances_due`, which also gives the claim order, wins in custom and
 * generic plans alike. `lapsed` has the same lower bound on `lease_until`, for the same reason: a
 * plan made while the table was small and never vacuumed would otherwise scan the table for it,
 * and keep doing so (a prepared statement's generic plan) once it has grown. The name bounds compare
 * under "POSIX" (byte order, as the column's "C"), the collation of `instances_due`'s `workflow`
 * alone (migration 0012): `instances_workflow_created` leads with `workflow`, and under "C" the
 * planner could take the bounds as its index condition and read every instance of the workflows,
 * sleeping and waiting ones too, whenever the statistics made that range look small.
 */
function dueConditions(s: string, alias: string): { free: string; lapsed: string } {
  const a = `${alias}.`;
  const pairs = `(${a}workflow || '@' || ${a}version) = ANY (ARRAY(SELECT n || '@' || v FROM unnest($2::text[], $3::integer[]) AS p(n, v)))`;
  const ranges =
    `${a}workflow >= (SELECT min(n COLLATE "POSIX") FROM unnest($2::text[]) AS n) COLLATE "POSIX" ` +
    `AND ${a}workflow <= (SELECT max(n COLLATE "POSIX") FROM unnest($2::text[]) AS n) COLLATE "POSIX"\n` +
    `    AND ${a}version >= (SELECT min(v) FROM unnest($3::integer[]) AS v) ` +
    `AND ${a}version <= (SELECT max(v) FROM unnest($3::integer[]) AS v)`;
  return {
    free: `${inDueIndex(alias)}\n    AND ${a}wake_at >= (SELECT ${MIN_BIGINT}) AND ${a}wake_at <= $1\n    AND ${ranges}\n    AND ${pairs}\n    AND ${postgresUnpaused(s, alias)}`,
    lapsed: `${a}lease_token IS NOT NULL AND ${a}lease_until >= (SELECT ${MIN_BIGINT}) AND ${a}lease_until < $1 AND ${a}status IN ${UNFINISHED} AND ${a}wake_at <= $1\n    AND ${pairs}\n    AND ${postgresUnpaused(s, alias)}`,
  };
}

/**
 * The fair order: priority, then the turn (a key's n-th due instance is in turn n, after a turn for
 * each of its instances running), then claim order. The claim's rows carry their turn as `round`.
 */
const FAIR_ORDER = 'priority, round, wake_at, created_at, id';

/** The most concurrency keys one claim takes turns between (see `fairPicks()`). */
export const FAIR_KEYS = 1000;

/** A round after every key's: what the claim takes in plain claim order. */
const LAST_ROUND = 2_147_483_647;

/**
 * CTEs `groups` (each priority's concurrency keys with instances in `instances_due_key`, up to
 * `FAIR_KEYS`, plus each priority's instances without a key as one more group) and `fair`: up to
 * `limit` due instances taken across the groups in turn, unlocked, each with its `round` (a
 * group's oldest due instance is in round 1, its second in round 2...). Priority still comes
 * first: once a group gave its whole share (it may have more), no later priority is picked, and
 * the filler goes on from there in claim order.
 *
 * The keys are found by a loose index scan (one descent per key, `keyed`): the next key of the
 * same priority, else the first key of a later one. `IS NOT NULL` ends each descent at the
 * priority's keyless rows (NULLs sort last), so they are never walked. Each descent lands on the
 * key's first entry, its oldest instance: with a share of one (as many groups as the claim's limit,
 * or more) and no exclusions, that entry, due and of the claim's workflows, is the key's pick, read
 * from the index alone. Otherwise each group reads at
 * most `ceil(limit / groups)` rows from `instances_due_key` (`priority = p AND concurrency_key = k
 * AND wake_at <= now`): a claim reads about one index entry per key plus what it takes, however
 * large any key's backlog. What rounds can't fill goes in plain claim order (`pickDue()`'s filler).
 */
function fairPicks(s: string, limit: string, extra: string): string {
  const { free } = dueConditions(s, 'c');
  const head = `c.id, c.priority, c.wake_at, c.created_at, row_number() OVER (ORDER BY c.wake_at, c.created_at, c.id) AS round`;
  const keyOrder = 'ORDER BY c.priority, c.concurrency_key LIMIT 1';
  // Each key's first entry, read from the index alone: its oldest instance when that is due.
  const walked = 'c.priority, c.concurrency_key AS k, c.id, c.wake_at, c.created_at, c.workflow, c.version';
  // Without exclusions a share of one is each key's first entry, which the walk has read already.
  // The walk's entry is the key's pick when it is due and of the claim's workflows; a key whose
  // first entry is not (another workflow's instance, one not due yet) has its share read as below,
  // or an older instance of another workflow under the same key would hide this key's from round 1.
  const walkedPick = `g.wake_at <= $1
      AND (g.workflow || '@' || g.version) = ANY (ARRAY(SELECT n || '@' || v FROM unnest($2::text[], $3::integer[]) AS p(n, v)))`;
  const gate = extra === '' ? `\n    WHERE (SELECT n FROM share) > 1 OR NOT (${walkedPick})` : '';
  const headsOfWalk =
    extra === ''
      ? `
    UNION ALL
    SELECT g.id, g.priority, g.wake_at, g.created_at, 1 AS round, 1 + ${runningOf('g.k')} AS turn FROM keys g
    WHERE (SELECT n FROM share) = 1 AND ${walkedPick}`
      : '';
  return `keyed AS (
  (SELECT ${walked} FROM ${s}.instances c WHERE ${inDueIndex('c')} AND c.concurrency_key IS NOT NULL ${keyOrder})
  UNION ALL
  SELECT n.* FROM keyed g CROSS JOIN LATERAL (
    SELECT * FROM (
      (SELECT ${walked} FROM ${s}.instances c
       WHERE ${inDueIndex('c')} AND c.priority = g.priority AND c.concurrency_key > g.k AND c.concurrency_key IS NOT NULL ${keyOrder})
      UNION ALL
      (SELECT ${walked} FROM ${s}.instances c
       WHERE ${inDueIndex('c')} AND c.priority > g.priority AND c.concurrency_key IS NOT NULL ${keyOrder})
    ) AS next LIMIT 1
  ) AS n
), keys AS (
  SELECT * FROM keyed LIMIT ${FAIR_KEYS}
), running AS (
  -- The instances of the claim's workflows running now, by key: turns their keys already had. Read
  -- only when there are keys to take turns between (the leases, one index entry each).
  SELECT c.concurrency_key AS k, count(*) AS n FROM ${s}.instances c
  WHERE EXISTS (SELECT 1 FROM keys) AND c.lease_token IS NOT NULL AND c.workflow = ANY ($2::text[])
    AND c.lease_until >= $1 AND c.lease_until <= (SELECT ${MAX_BIGINT}) AND c.status IN ${UNFINISHED}
  GROUP BY c.concurrency_key
), share AS (
  SELECT ceil(${limit}::numeric / greatest(1, (SELECT count(*) FROM keys) + (SELECT count(*) FROM priorities WHERE priority IS NOT NULL)))::integer AS n
), rounds AS (
    SELECT h.*, h.round + ${runningOf('g.k')} AS turn FROM keys g CROSS JOIN LATERAL (
      SELECT ${head} FROM ${s}.instances c
      WHERE c.priority = g.priority AND c.concurrency_key = g.k AND ${free}${extra}
      ORDER BY c.wake_at, c.created_at, c.id LIMIT (SELECT n FROM share)
    ) AS h${gate}${headsOfWalk}
    UNION ALL
    SELECT h.*, h.round + ${runningOf(null)} AS turn FROM priorities p CROSS JOIN LATERAL (
      SELECT ${head} FROM ${s}.instances c
      WHERE c.priority = p.priority AND c.concurrency_key IS NULL AND ${free}${extra}
      ORDER BY c.wake_at, c.created_at, c.id LIMIT (SELECT n FROM share)
    ) AS h
    WHERE p.priority IS NOT NULL
), fair AS (
  -- A group that gave its whole share may have more: no pick of a later priority goes before those.
  SELECT * FROM rounds
  WHERE priority <= coalesce((SELECT min(priority) FROM rounds WHERE round = (SELECT n FROM share)), ${LAST_ROUND})
  ORDER BY priority, turn, wake_at, created_at, id LIMIT ${limit}
)`;
}

/** The instances running under key `key` (a column, or `null` for the keyless), from CTE `running`. */
function runningOf(key: string | null): string {
  const match = key === null ? 'r.k IS NULL' : `r.k = ${key}`;
  return `coalesce((SELECT r.n FROM running r WHERE ${match}), 0)`;
}

/**
 * CTEs `priorities`, the fair picks' (`fairPicks()`), `taken` (those picks, locked with SKIP
 * LOCKED), `free` and `lapsed` (each locked with SKIP LOCKED, `columns` plus the fair order's),
 * and `picked`: the first `limit` of all three in the fair order. The statement must start
 * `WITH RECURSIVE`.
 *
 * The picks are read unlocked and then locked by id, so a claim locks only what it may take; a
 * pick another claim holds is passed over, and `free` fills the claim's remaining room in claim
 * order, as before fair claims (two claims at once then both take something).
 *
 * `instances_due` leads with `priority`, so `wake_at <= now` bounds a walk of it only within one
 * priority: walked across priorities, it would read every sleeping instance (suspended with a
 * later `wake_at`) of a priority before reaching the next. So `priorities` lists the distinct
 * priorities in it, lowest first, one index descent each (a loose index scan), and `free` takes
 * each priority's due instances in claim order from a scan bounded by `priority = p AND wake_at <=
 * now`, stopping (its outer `LIMIT`) once it has its room: a claim reads what it takes plus one
 * probe per priority, however many instances sleep. `free`'s outer `LIMIT` has no `ORDER BY` on
 * purpose: the nested loop runs the priorities in the order `priorities` made them (ascending, one
 * per recursion step), and a sort there would run every priority's scan, locking up to `limit`
 * rows each.
 */
function pickDue(s: string, columns: string, limit: string, extra = ''): string {
  const { free, lapsed } = dueConditions(s, 'c');
  const cols = `c.id, c.priority, c.wake_at, c.created_at${columns ? `, ${columns}` : ''}`;
  const room = `(SELECT greatest(0, ${limit} - count(*)) FROM taken)`;
  return `priorities AS (
  (SELECT c.priority FROM ${s}.instances c WHERE ${inDueIndex('c')} ORDER BY c.priority LIMIT 1)
  UNION ALL
  SELECT (SELECT c.priority FROM ${s}.instances c WHERE ${inDueIndex('c')} AND c.priority > p.priority ORDER BY c.priority LIMIT 1)
  FROM priorities p WHERE p.priority IS NOT NULL
), ${fairPicks(s, limit, extra)}, taken AS (
  SELECT ${cols}, f.turn AS round FROM fair f JOIN ${s}.instances c ON c.id = f.id
  WHERE ${free}${extra}
  FOR UPDATE OF c SKIP LOCKED
), free AS (
  SELECT f.*, ${LAST_ROUND} AS round FROM priorities p CROSS JOIN LATERAL (
    SELECT ${cols} FROM ${s}.instances c
    WHERE c.priority = p.priority AND ${free}${extra} AND c.id NOT IN (SELECT id FROM taken)
    ORDER BY c.wake_at, c.created_at, c.id LIMIT ${room}
    FOR UPDATE OF c SKIP LOCKED
  ) AS f
  WHERE p.priority IS NOT NULL
  LIMIT ${room}
), lapsed AS (
  SELECT ${cols}, ${LAST_ROUND} AS round FROM ${s}.instances c
  WHERE ${lapsed}${extra}
  ORDER BY c.priority, c.wake_at, c.created_at, c.id LIMIT ${limit}
  FOR UPDATE OF c SKIP LOCKED
), picked AS (
  SELECT * FROM (SELECT * FROM taken UNION ALL SELECT * FROM free UNION ALL SELECT * FROM lapsed) AS due ORDER BY ${FAIR_ORDER} LIMIT ${limit}
)`;
}

/**
 * The claim's statements for one schema, built once (see `claimInstances()`).
 */
export function postgresClaimStatements(schemaName: string) {
  const s = quoteIdentifier(schemaName);

  /**
   * Leases the rows of CTE `picked` and returns them in claim order, each with the last signal id.
   *
   * Unless `flushed`, the statement's transaction commits without waiting for its WAL flush
   * (`synchronous_commit` off for that transaction alone): a claim acknowledges nothing to anyone,
   * and losing it to a server crash is harmless. WAL is replayed in order, so a claim survives
   * whenever anything committed after it does, above all the fenced writes of its execution: a lost
   * claim leaves the instance as it was before it, with nothing of that execution recorded, and its
   * writes refused (their lease token is gone). The execution's step then runs again, as after any
   * crash. The one trace is its `runs`, one lower than the attempts that really started. A claim
   * under limits stays flushed: a lost one would free its concurrency slot and rate-window count
   * while its execution still runs.
   */
  const leaseAndReturn = (now: string, token: string, owner: string, until: string, flushed: boolean) => `claimed AS (
  UPDATE ${s}.instances i SET lease_token = ${token}, lease_owner = ${owner}, lease_until = ${until}, runs = i.runs + 1,
    updated_at = ${now}, status = CASE WHEN i.status = 'compensating' THEN i.status ELSE 'running' END
  FROM picked WHERE i.id = picked.id
  RETURNING ${instanceColumns('i')}
)
SELECT (SELECT coalesce(max(id), 0) FROM ${s}.signals) AS last_signal_id, c.*
FROM (SELECT ${flushed ? '1' : `set_config('synchronous_commit', 'off', true)`}) AS one LEFT JOIN claimed c ON true
ORDER BY c.priority, c.wake_at, c.created_at, c.id`;

  return {
    /** The prefix of a workflow's concurrency lock key. */
    concurrencyLockPrefix: `@nestjs/workflows:concurrency:${schemaName}:`,

    /**
     * A claim without limits, in one statement: $1 now, $2 workflow names, $3 their versions, $4
     * limit, $5 token, $6 owner, $7 lease until. One row per claimed instance in claim order, or
     * one row of NULLs, each with the last signal id read in the claim's snapshot (so every signal
     * up to it is visible to the execution: ids become visible in order).
     */
    claim: `WITH RECURSIVE ${pickDue(s, '', '$4')}, ${leaseAndReturn('$1', '$5', '$6', '$7', false)}`,

    /**
     * A claim of named instances, in one statement and by key (no search): $1 now, $2 workflow
     * names, $3 their versions, $4 the ids, $5 token, $6 owner, $7 lease until. Leases those of the
     * ids that are due and free (no lease) and of the listed versions, passing over locked rows as
     * `claim` does; returns what `claim` returns.
     */
    claimByIds: `WITH picked AS (
  SELECT c.id FROM unnest($4::text[]) AS named(id) JOIN ${s}.instances c ON c.id = named.id
  WHERE c.status IN ${UNFINISHED} AND c.wake_at IS NOT NULL AND c.lease_token IS NULL AND c.wake_at <= $1
    AND EXISTS (SELECT 1 FROM unnest($2::text[], $3::integer[]) AS p(n, v) WHERE p.n = c.workflow AND p.v = c.version)
    AND ${postgresUnpaused(s, 'c')}
  FOR UPDATE OF c SKIP LOCKED
), ${leaseAndReturn('$1', '$5', '$6', '$7', false)}`,

    /** $1 keys (each workflow's lock key), locked in hash order, so every claim takes them alike. */
    lockWorkflows: `SELECT count(pg_advisory_xact_lock(h)) FROM (
  SELECT DISTINCT hashtextextended(k, 0) AS h FROM unnest($1::text[]) AS k ORDER BY 1
) AS locks`,

    /**
     * Under limits, in one snapshot: the leases per workflow and concurrency key, live (`lease`) or
     * lapsed (`lapsed`) at $2 now ($1 workflows), and the open rate windows that are full ($3
     * workflows, $4 their `max`, $5 their per-key `max`); `kind` tells them apart.
     */
    claimUsage: `SELECT CASE WHEN lease_until >= $2 THEN 'lease' ELSE 'lapsed' END AS kind, workflow, concurrency_key AS key, count(*)::integer AS count
FROM ${s}.instances WHERE lease_token IS NOT NULL AND workflow = ANY($1::text[])
GROUP BY 1, workflow, concurrency_key
UNION ALL
SELECT CASE WHEN r.has_key THEN 'full-key' ELSE 'full' END, r.workflow, r.key, r.count
FROM ${s}.rate_windows r JOIN unnest($3::text[], $4::integer[], $5::integer[]) AS rule(workflow, max, key_max)
  ON rule.workflow = r.workflow
WHERE r.window_end > $2 AND r.count >= CASE WHEN r.has_key THEN rule.key_max ELSE rule.max END`,

    /** Under limits, ends the leases of $1 (workflows) that lapsed at $2 (now). */
    revokeLapsed: `UPDATE ${s}.instances SET lease_token = NULL, lease_until = NULL
WHERE lease_token IS NOT NULL AND lease_until < $2 AND workflow = ANY($1::text[])`,

    /**
     * Under limits, the candidates in claim order, locked: $1 now, $2 workflow names, $3 their
     * versions, $4 how many, $5 workflows with no free slot, $6/$7 (workflow, concurrency key)s
     * with none, $8 workflows whose own window is full, $9/$10 (workflow, rate-limit key)s whose
     * window is full. Those are passed over here, so a busy key never holds back the others; an
     * instance to terminate is not (it needs no room: see `ClaimCandidate`). A filter on the row
     * only: the index conditions, and so the plan, are the same.
     */
    claimCandidates: `WITH RECURSIVE ${pickDue(
      s,
      'c.workflow, c.concurrency_key, c.rate_limit_key, c.terminate_requested',
      '$4',
      `
    AND (c.terminate_requested OR (NOT (c.workflow = ANY($5::text[]))
      AND NOT EXISTS (SELECT 1 FROM unnest($6::text[], $7::text[]) AS f(w, k) WHERE f.w = c.workflow AND f.k = c.concurrency_key)
      AND NOT (c.workflow = ANY($8::text[]))
      AND NOT EXISTS (SELECT 1 FROM unnest($9::text[], $10::text[]) AS f(w, k) WHERE f.w = c.workflow AND f.k = c.rate_limit_key)))`,
    )}
SELECT id, workflow, concurrency_key, rate_limit_key, terminate_requested FROM picked ORDER BY ${FAIR_ORDER}`,

    /**
     * Locks the rate windows $1/$2/$3 (workflow, has_key, key) in array order, inserting missing
     * ones as ended windows so there is always a row to lock; returns them as they are under the lock.
     */
    lockRateWindows: `INSERT INTO ${s}.rate_windows AS r (workflow, has_key, key, window_end, count)
SELECT w.workflow, w.has_key, w.key, 0, 0
FROM unnest($1::text[], $2::boolean[], $3::text[]) WITH ORDINALITY AS w(workflow, has_key, key, ord)
ORDER BY w.ord
ON CONFLICT (workflow, has_key, key) DO UPDATE SET count = r.count
RETURNING r.workflow, r.has_key, r.key, r.window_end, r.count`,

    /**
     * The limited claim's end, on rows it already holds: writes back the windows ($7..$11 as in
     * `lockRateWindows`, plus window ends and counts) and leases $2 (ids): $1 now, $3 token,
     * $4 owner, $5 lease until. Returns what `claim` returns.
     */
    leaseLocked: `WITH windows AS (
  UPDATE ${s}.rate_windows r SET window_end = w.window_end, count = w.count
  FROM unnest($6::text[], $7::boolean[], $8::text[], $9::bigint[], $10::integer[]) AS w(workflow, has_key, key, window_end, count)
  WHERE r.workflow = w.workflow AND r.has_key = w.has_key AND r.key = w.key
  RETURNING 1
), picked AS (SELECT unnest($2::text[]) AS id), ${leaseAndReturn('$1', '$3', '$4', '$5', true)}`,
  };
}

/** What `postgresClaimStatements()` builds. */
export type PostgresClaimStatements = ReturnType<typeof postgresClaimStatements>;
