import type { WorkflowInstance, WorkflowStatus } from './workflow-instance.js';
import type {
  WorkflowInstanceDetails,
  NewWorkflowInstance,
  WorkflowCancelRequest,
  WorkflowLeaseFlags,
  WorkflowListQuery,
  WorkflowReopen,
  WorkflowWrite,
  WorkflowPurgeQuery,
  WorkflowPurgeResult,
  WorkflowFork,
} from './workflow-store-instances.js';
import type {
  WorkflowClaimRequest,
  WorkflowClaim,
  WorkflowUndeclaredDue,
  WorkflowUndeclaredDueQuery,
} from './workflow-store-claims.js';
import type {
  NewWorkflowSignal,
  WorkflowSignalResult,
  WorkflowSignalQuery,
  WorkflowSignalRecord,
  WorkflowUntakenSignal,
  WorkflowUntakenSignalQuery,
} from './workflow-store-signals.js';
import type { WorkflowScheduleStore } from './workflow-store-schedules.js';
import type { WorkflowStreamStore } from './workflow-store-streams.js';
import type { WorkflowPauseStore } from './workflow-store-pauses.js';
import type { WorkflowBulkStore } from './workflow-store-bulk.js';
import type { WorkflowCallbackStore } from './workflow-store-callbacks.js';
import type { WorkflowProcessStore } from './workflow-store-processes.js';
import type { WorkflowPayloadChange, WorkflowPayloadRewrite, WorkflowSignalPageQuery } from './payload-rewrite.js';
import type { WorkflowStoreTransaction, WorkflowStoreTransactionOptions } from './workflow-store-transactions.js';
import type { WorkflowListenOptions, WorkflowWakeUpKind } from './workflow-store-listen.js';

export type { WorkflowPayloadChange, WorkflowPayloadRewrite, WorkflowSignalPageQuery } from './payload-rewrite.js';
export type { WorkflowListenOptions, WorkflowWakeUpKind } from './workflow-store-listen.js';

/**
 * Where instances, their journals and waits, signals and schedules live. `InMemoryWorkflowStore`
 * ships for development and tests; `PostgresWorkflowStore` and `MySqlWorkflowStore` for
 * production. You may write your own: `workflowStoreContract()` from `@nestjs/workflows/testing`
 * checks an implementation against every rule below, races included.
 *
 * Most methods are plain reads and writes. The ones that need care are `claim` and
 * `claimSchedules` (lock candidates, skip those another claim holds), `write`, `renew`,
 * `writeSchedule` and `createOccurrence` (fenced by the lease token), `signal` with `write` (ordered by the signal lock),
 * `saveSchedule` (conditional on a revision), and `reopen`, `requestCancel` and `purge` (which
 * re-check their conditions on the rows they change). Each method's comment names the race its
 * rule prevents. The schedule methods are in `WorkflowScheduleStore` (workflow-store-schedules.ts),
 * the streams' in `WorkflowStreamStore` (workflow-store-streams.ts), the callbacks' in
 * `WorkflowCallbackStore` (workflow-store-callbacks.ts), the worker processes' records in
 * `WorkflowProcessStore` (workflow-store-processes.ts).
 */
export interface WorkflowStore
  extends
    WorkflowScheduleStore,
    WorkflowStreamStore,
    WorkflowPauseStore,
    WorkflowBulkStore,
    WorkflowCallbackStore,
    WorkflowProcessStore {
  /**
   * Inserts a `pending` instance due at `now`, unless an instance with its id exists. Returns the
   * stored instance: the new one (`created: true`) or the existing one untouched (`created: false`).
   * Atomic per id: of two concurrent creates of one id, exactly one creates; the other sees it.
   *
   * With `debounce`, atomic per workflow name and debounce key instead: when the instance that the
   * last create with that name and key made has not started (status `pending`, `runs` 0, no lease,
   * no cancel or terminate requested), that instance takes `input`, is due at `wakeAt` or at its
   * burst's first create plus `maxWait`, whichever is sooner, its `deadline` moves with it (its own
   * `timeout` from then), `updatedAt` is `now`, and it is returned (`created: false`); otherwise the
   * instance is created as without `debounce` and becomes the key's, its `now` the burst's first
   * create. So of two concurrent debounced creates of one key, one creates and the other updates
   * what it created (never two instances: the race two processes' starts run), and a create that
   * lands after a claim took the instance makes a new one instead of changing what already runs.
   */
  create(instance: NewWorkflowInstance): Promise<{ instance: WorkflowInstance; created: boolean }>;

  /**
   * Optional: `create()` inside the application's own transaction (`start(..., { transaction })`),
   * so the instance commits or rolls back with the application's rows. Writes only through
   * `transaction`, and never lets a database error happen inside it (a failed statement aborts a
   * PostgreSQL transaction): use insert-or-ignore, not catch-the-duplicate.
   */
  createInTransaction?(
    transaction: unknown,
    instance: NewWorkflowInstance,
  ): Promise<{ instance: WorkflowInstance; created: boolean }>;

  /**
   * Optional (`client.fork()`; every store we ship has it): creates `fork.instance` as `create()`
   * does (`pending`, due at its `wakeAt`, its `signalCursor` the last signal id), with `forkedFrom`
   * set to `fork.from` and `fork.entries` as its journal in that order, all in one transaction: no
   * reader (a claim, above all) ever sees the fork without its journal, which would run it from
   * the top. An existing id is returned untouched (`created: false`), as by `create()`.
   */
  fork?(fork: WorkflowFork): Promise<{ instance: WorkflowInstance; created: boolean }>;

  /** Optional: `fork()` inside the application's transaction (`fork(id, { transaction })`), under the rules of `createInTransaction()`. */
  forkInTransaction?(
    transaction: unknown,
    fork: WorkflowFork,
  ): Promise<{ instance: WorkflowInstance; created: boolean }>;

  /**
   * The instance with the waits its last suspension registered (`[]` if none) and, with
   * `journal: true`, its journal in first-write order; `null` for an unknown id.
   */
  get(id: string, options?: { journal?: boolean }): Promise<WorkflowInstanceDetails | null>;

  /**
   * Instances matching every given filter, ordered by `createdAt`, then `id` (oldest first, or
   * newest first with `order: 'desc'`): one page. With `after`, the page starts right after that
   * position in the order (keyset paging: a page deep in a large table costs what the first one
   * does, and instances created meanwhile never shift a page the way `offset` does).
   */
  list(query: WorkflowListQuery): Promise<WorkflowInstance[]>;

  /**
   * Cancel: on a `pending`, `running` or `suspended` instance whose `cancelRequested` is false,
   * sets `cancelRequested` and `cancelReason`.
   *
   * Terminate (`request.terminate`): on a `pending`, `running`, `suspended` or `compensating`
   * instance whose `terminateRequested` is false, sets `cancelRequested`, `terminateRequested` and
   * `cancelReason`, whether or not a cancel came first.
   *
   * Either way makes the instance due now (unless it already is) and sets `updatedAt`; returns
   * whether it changed anything (`false`: unknown id, another status, or a repeated request).
   * One conditional update, so of two concurrent requests of one kind exactly one is accepted.
   * Racing the lease holder's suspending `write()` (a terminate: also one that leaves it
   * `compensating`), the instance ends up due whichever lands first (here, or in `write()`'s
   * release rule), so a request is never held back.
   */
  requestCancel(id: string, request: WorkflowCancelRequest): Promise<boolean>;

  /**
   * An operator's retry (`WorkflowClient.retry()`), as one conditional write: only while the
   * instance holds no live lease and its `status` and `runs` are still `expect`'s (nothing moved it
   * since the engine read it), upserts `entries` as `write()` does, sets `status`, `error`,
   * `deadline` (when given), clears the cancel flags (see below) and any lapsed lease token, makes
   * it due now and sets `updatedAt`, and deletes the `retractSignal` (when given and stored);
   * returns `true`. Otherwise changes nothing and returns `false`. Locks the row, so of two
   * concurrent retries exactly one lands (the other sees `runs` or `status` moved). The signal goes
   * in the same transaction: retracted apart from the reopen, a child's old end could reach its
   * parent after the child ran again, or its new end could be deduplicated against the old one and
   * lost. Its id is not given out again (ids only grow), so retracting the newest signal is safe.
   * Reopened to `compensating`, it keeps `cancelRequested` and `cancelReason` when a cancel (not a
   * terminate) was requested: the retried compensations are still the cancel's, and the engine
   * reads the flag to end the instance `cancelled`, not `failed` (the error's name can't tell: a
   * workflow may throw a `WorkflowCancelledError` of its own).
   * With `awaitedChildren`, it also refuses unless each such child exists and is unfinished or has
   * its end stored, read once the row is locked: the caller checked them before, and a `purge()` or
   * `delete()` landing in between would leave the reopened parent waiting forever for an end that is
   * gone (once reopened, the parent is unfinished, so both keep the child and its end).
   */
  reopen(id: string, reopen: WorkflowReopen): Promise<boolean>;

  /**
   * Deletes the instance, with its journal and waits, if its status is one of `statuses`; returns
   * whether it did. One statement: a worker still holding a lease on it finds it gone at its next
   * write or renewal, and writes nothing. Never a child (`parentId`) whose parent exists
   * unfinished, checked in that statement: the child's end (the `'$child-ended'` signal keyed by
   * its id) reaches the parent only through the child, for `purge()` keeps that end while the
   * child's parent is unfinished; deleted, the end would be purged and the parent wait forever.
   * A finished parent is checked under its row lock, which a `reopen()` of it holds from its check
   * of the children to its commit: wait for that reopen, read the parent again, refuse.
   */
  delete(id: string, statuses: readonly WorkflowStatus[]): Promise<boolean>;

  /**
   * Stores a signal under the next signal id, and makes due now every `suspended` instance that
   * has a wait with the same name and exactly the same key. Returns the id and how many it woke.
   *
   * Signals are serialized with each other and with `write()`s that register waits by the signal
   * lock: taken exclusively here, before the id is chosen, and held until commit (`write()` takes it
   * shared). So ids become visible in id order (a reader that saw id N has seen every id below N),
   * and a signal never slips between an execution's last read of signals and its suspension. The
   * lock may be one per topic (name and exact key) instead of one per store, as PostgreSQL's is:
   * then the order holds per topic, `signals()` takes the topic's lock shared before reading, and
   * a signal and a suspension wait for each other only when they can match.
   *
   * With a `dedupeId`, a signal stored earlier with the same name and `dedupeId` turns the call
   * into a no-op that returns the earlier id and key with `created: false` and wakes nothing.
   * Enforced by a unique key on `(name, dedupeId)` with insert-or-ignore: a read-then-insert lets
   * two concurrent senders both store it.
   */
  signal(signal: NewWorkflowSignal): Promise<WorkflowSignalResult>;

  /**
   * Optional: `signal()` inside the application's transaction (`signal(..., { transaction })`),
   * under the rules of `createInTransaction()`. The signal lock is held until that transaction
   * ends. On PostgreSQL it must be READ COMMITTED, or the wake-up misses waits committed after
   * its snapshot: other isolation levels are refused.
   */
  signalInTransaction?(transaction: unknown, signal: NewWorkflowSignal): Promise<WorkflowSignalResult>;

  /** Signals named `name` with exactly `key` and `afterId < id <= upToId`, in id order. */
  signals(query: WorkflowSignalQuery): Promise<WorkflowSignalRecord[]>;

  /**
   * Optional (the dashboard lists what it returns): up to `limit` signals, newest first, that no
   * stored instance took: no journal entry records the signal's id (`signalId`). Only among the
   * newest `UNTAKEN_SIGNALS_SCANNED` signals, so its cost stays bounded by the journal, not by the
   * signal log; engine signals (names starting with `$`) are left out. A signal whose instance
   * was deleted or purged counts as untaken. For an operator, not for a loop: it reads every
   * journal entry that took a signal.
   */
  untakenSignals?(query: WorkflowUntakenSignalQuery): Promise<WorkflowUntakenSignal[]>;

  /**
   * Housekeeping, each part on its own (none atomic with another):
   * - up to `limit` finished instances whose status is in `statuses` and `updatedAt < before`,
   *   oldest first, with their journals and waits. The status and `updatedAt` are re-checked on
   *   the deleted rows themselves, so an instance an operator reopened meanwhile stays. Never a
   *   child (`parentId`) whose parent exists unfinished: its end's signal is found through it;
   * - up to `limit` signals with `createdAt < before`, lowest id first, never the newest signal
   *   (the last id must never go back, or a new instance's cursor would let it take old signals),
   *   and never a child's end (`'$child-ended'`, keyed by the child's id) while that child's
   *   parent exists unfinished: a parent may ask for a child's result long after the child ended
   *   (a sleep in between), and would wait forever for an end purged meanwhile. Check both with
   *   primary-key lookups per candidate (child, then parent), not a scan;
   * - for both, a finished parent is checked under its row lock as in `delete()` (during its reopen,
   *   keep the child and end); lock only finished parents, and mind deadlocks between purges;
   * - up to `limit` rate-limit windows that ended before `before` (an ended window is the same as
   *   none), re-checking `windowEnd` on the deleted rows and skipping rows a claim holds locked;
   * - up to `limit` debounce keys, whatever their age, whose instance has started (`runs > 0`) or
   *   is gone: the key's next start makes a new instance with or without the row. Never one whose
   *   instance has not started (the next start must join it). Delete a row only while it still
   *   names the instance that was checked (compare `instance_id` on the deleted row itself): a
   *   debounced create of the key may point it at a new, unstarted instance meanwhile, and a delete
   *   that re-checked only "started or gone" against an older snapshot (PostgreSQL's READ
   *   COMMITTED re-check of a locked row) would drop the row of that new burst, and the next start
   *   would make a second instance. `runs` only grows, so a check that saw it started holds.
   */
  purge(query: WorkflowPurgeQuery): Promise<WorkflowPurgeResult>;

  /**
   * Leases up to `limit` due instances to one worker: lowest `priority` first, then the oldest
   * `wakeAt`, then `createdAt`, then `id`. Due: unfinished, `wakeAt <= now`, no lease or a lapsed
   * one (`leaseUntil < now`), and a `workflow`/`version` pair in `workflows`. Each claimed instance
   * gets the lease (`leaseToken`, `leaseOwner`, `leaseUntil`), `runs + 1`, `updatedAt = now` and
   * status `running` (a `compensating` one keeps its status). Returns them as updated, with the last
   * signal id read after the claim (the execution's signal cursor). Two concurrent claims never
   * return the same instance: lock the candidates, skip rows another claim holds (`SKIP LOCKED`).
   *
   * `limits`: a live lease (`leaseUntil >= now`, so up to and including `leaseUntil`) holds a slot,
   * a terminated instance's too (its execution may still be in workflow code); at most `limit`
   * instances of the workflow (all versions) and `perKey` of one `concurrencyKey` hold one at a
   * time. Only the workflow's own leases count: another workflow's, even with the same concurrency
   * key, take none of its slots. `rateLimits`: every claim takes room in its workflow's window and
   * its `rateLimitKey`'s window; a window holds `max` claims, opens at the first claim after the
   * previous one ended (after an idle gap too: not on a grid) and lasts `duration`. Candidates
   * without room are passed over, so one busy key never holds back the others. Counting and leasing
   * are one step under locks taken in a fixed order (per workflow for slots, per window row for
   * rates), so two claims never both take the last room. But a candidate with `terminateRequested`
   * is claimed whatever its slots and windows hold, taking room in none: the engine just ends it (no
   * workflow code runs), so an operator's terminate never waits for long executions of its key. A
   * cancel runs compensations (workflow code): it waits for room like any execution.
   *
   * Before counting slots, under those locks, a claim ends each lease of a workflow in `limits` (with
   * a `limit` or a `perKey`) that lapsed at `now`: clears `leaseToken` and `leaseUntil`, leaving the
   * instance due. It counts that slot free and may fill it; left standing, the lease's holder
   * (stalled, not dead) could renew it and run beside the new one, over the limit. A renewal that
   * lands first is counted live; one that lands after finds its token gone.
   */
  claim(request: WorkflowClaimRequest): Promise<WorkflowClaim>;

  /**
   * Extends the lease to `leaseUntil` while `token` is still the instance's lease token (even if it
   * lapsed, while nobody claimed it since nor ended it: see `claim()`'s `limits`), and returns the
   * cancel and terminate flags; else changes nothing and returns `null`. One conditional update.
   */
  renew(id: string, token: string, leaseUntil: number): Promise<WorkflowLeaseFlags | null>;

  /**
   * Every write of the lease holder, all or nothing in one transaction, and only while `token` is
   * the instance's lease token (else nothing is written and it returns `false`: fencing, so a
   * worker that lost its lease can't overwrite its successor's work). If any part can't be stored
   * (a journal entry, the output, the custom status or the signal's payload holds a value JSON
   * can't carry, such as a BigInt), the call rejects having stored nothing of it: the lease is
   * still held and the signal unsent. That failure is the call's alone, never that of writes of
   * other instances it was sent with. In order:
   *
   * 1. With `signal`, take the signal lock exclusively; else with `release.waits` not empty, shared.
   *    Before anything else, so the lock order is the same everywhere.
   * 2. Lock the instance row if its lease token is `token`; otherwise stop and return `false`.
   * 3. Upsert `entries` by name (a new name goes after every existing one; an existing one is
   *    replaced whole).
   * 4. Set `status`, `output`, `error`, `customStatus` when given (`undefined` leaves them), and
   *    store `signal` as `signal()` does (dedupe and wake-ups included).
   * 5. With `release`: replace the waits with `release.waits`, clear `leaseToken` and `leaseUntil`
   *    (keep `leaseOwner`), and set `wakeAt` to `now` if a stored signal above
   *    `release.signalCursor` matches one of the new waits, or the instance has `cancelRequested`
   *    and goes `suspended`, or has `terminateRequested` and goes `compensating` (a compensation's
   *    backoff); otherwise to `release.wakeAt`. This is what makes a signal sent
   *    during the execution (after its cursor) wake the instance it suspends. The cursor is the
   *    release's, not the instance's `signalCursor` from its creation: the execution saw the
   *    signals between the two, and waking on them would run it again for nothing, forever.
   * 6. Set `updatedAt = now` when anything besides the journal changed.
   */
  write(id: string, token: string, write: WorkflowWrite): Promise<boolean>;

  /**
   * Optional (SQL stores): `ctx.transaction()`. Runs `body` in one database transaction on the
   * store's own database and commits when it resolves (rolls back when it throws). The body runs
   * the workflow's callback on `tx.handle`, then records the step's result with `tx.write()` in
   * the same transaction, fenced by `token` like `write()`: so the callback's rows and the result
   * commit together or not at all. A store without it can't run `ctx.transaction()`.
   */
  transaction?<T>(
    id: string,
    token: string,
    body: (tx: WorkflowStoreTransaction) => Promise<T>,
    options: WorkflowStoreTransactionOptions,
  ): Promise<T>;

  /**
   * Re-encryption (optional for stores of your own; every store we ship has it, and the contract
   * suite checks it unless told not to): replaces payloads of one instance, each only while the
   * store still holds exactly its `from` (compare-and-set per payload, the value as `get()` read it),
   * and returns how many it replaced. So it is safe beside running workers without a lease: a write
   * that changed a payload since it was read wins, and that payload is simply read again on the
   * next pass. Changes nothing else (no status, lease, `updatedAt`, journal order); an unknown id or
   * entry name replaces nothing.
   */
  rewritePayloads?(id: string, rewrite: WorkflowPayloadRewrite): Promise<number>;

  /** Re-encryption (optional, as `rewritePayloads`): one page of every stored signal, in id order. */
  listSignals?(query: WorkflowSignalPageQuery): Promise<WorkflowSignalRecord[]>;

  /** Re-encryption (optional, as `rewritePayloads`): replaces a signal's payload while it is still `change.from`; returns whether it did. */
  rewriteSignalPayload?(id: number, change: WorkflowPayloadChange): Promise<boolean>;

  /**
   * Optional: prepares the store before the engine uses it (a SQL store migrates, or checks that
   * its schema is current). Called once at application startup, before any worker starts.
   */
  init?(): Promise<void>;

  /**
   * Optional: calls `listener` when another process may have made work due (a start, a signal, a
   * hand-back), so idle workers look at once instead of at their next poll. Polling stays the
   * safety net, so a missed notification only costs latency. When the notification names the one
   * instance it made due (a start), `listener` gets its id, which the worker may pass to `claim()`
   * as `ids`. Optionally, a cancel or terminate is named with `kind` `'cancel'`, sent only once
   * stored: the holder of that instance's lease reads its flags at once (`WorkflowWakeUpKind`).
   * Resolves to a function that stops it. `options.needsWakeUps` (see `WorkflowListenOptions`)
   * says when the listener can do without; `options.held` names the instances it holds, for a
   * store that can only ask which of them has a request (MySQL): it must ask even while the
   * listener needs no wake-ups, after a `'cancel'` without an id for the claims still out.
   */
  listen?(
    listener: (id?: string, kind?: WorkflowWakeUpKind) => void,
    options?: WorkflowListenOptions,
  ): Promise<() => Promise<void>>;

  /**
   * Optional: calls `listener` with an instance's id when it ends (completed, failed, cancelled,
   * compensation_failed) in any process, and with `null` when ends may have been missed (after a
   * reconnection), so `handle.result()` reads at once instead of at its next poll. Polling stays
   * the safety net. Resolves to a function that stops it.
   *
   * `id`: the instance the caller waits for, when it waits for one (`handle.result()` does). A
   * store that hears of every end may ignore it; one that must ask (MySQL polls) may watch just
   * that instance and call `listener` only for it.
   */
  listenForEnds?(listener: (id: string | null) => void, id?: string): Promise<() => Promise<void>>;

  /**
   * Optional, for a store whose `listenForEnds()` hears only the ends that were asked for (the
   * PostgreSQL store notifies an end only then, since every notifying commit of the server waits for
   * the one before it): asks that the end of `id` reach `listenForEnds()` in every process.
   * `handle.result()` calls it after `listenForEnds()` resolved, unless this process runs the
   * instance itself (its own events tell it the end). Resolves to `true` when the instance is
   * unfinished (its end will be heard), `false` when it is finished or unknown (nothing will be
   * heard: read it). Ordered with the end: asked before the end is stored, the end is heard; after,
   * it resolves `false`. Without it, every end is heard (or, on MySQL, polled for). A store whose
   * ask holds the instance row where `claim()` passes over held rows must not leave a due instance
   * unclaimed for it: the PostgreSQL store wakes the workers again when the instance is due at
   * `now` and free.
   */
  requestEndNotice?(id: string, now: number): Promise<boolean>;

  /**
   * Optional: how many instances are due at `now` and held by no live lease (what `claim()` could
   * take, whatever the workflow), counted up to `cap`. For metrics and health checks; a store
   * without it reports no backlog.
   */
  countDue?(now: number, cap: number): Promise<number>;

  /**
   * Optional: the instances `claim()` could have taken at `query.dueBefore` already but that are not
   * of a workflow/version pair in `query.workflows`, counted per pair (ordered by workflow, then
   * version), stopping after `query.cap` instances in all. Due as in `claim()`: unfinished, `wakeAt
   * <= dueBefore`, and no lease or one that lapsed before `dueBefore` (`leaseUntil < dueBefore`).
   * The worker asks, rarely and only when a claim of its own found nothing, with `dueBefore` some
   * lease durations ago: what is found has waited that long for a claim, so most likely no running
   * process declares its version (removed in a deploy, or a rollback to a release without it), and
   * the worker says so in its log. One read, by the indexes the claim and `countDue()` use (never a
   * scan of every instance); a store without it reports nothing.
   */
  countUndeclaredDue?(query: WorkflowUndeclaredDueQuery): Promise<WorkflowUndeclaredDue[]>;

  /** Optional: releases what the store opened itself (a LISTEN connection...), never the app's pool. */
  close?(): Promise<void>;
}

export type {
  WorkflowInstanceDetails,
  NewWorkflowInstance,
  NewInstanceDebounce,
  WorkflowCancelRequest,
  WorkflowLeaseFlags,
  WorkflowListQuery,
  WorkflowListPosition,
  WorkflowReopen,
  WorkflowWrite,
  WorkflowRelease,
  WorkflowPurgeQuery,
  WorkflowPurgeResult,
  WorkflowFork,
} from './workflow-store-instances.js';
export type {
  WorkflowRateWindow,
  WorkflowConcurrencyLimit,
  WorkflowRateLimitRule,
  WorkflowClaimRequest,
  WorkflowClaim,
  WorkflowUndeclaredDue,
  WorkflowUndeclaredDueQuery,
} from './workflow-store-claims.js';
export type {
  NewWorkflowSignal,
  WorkflowSignalResult,
  WorkflowSignalQuery,
  WorkflowSignalRecord,
  WorkflowUntakenSignal,
  WorkflowUntakenSignalQuery,
} from './workflow-store-signals.js';
export type {
  WorkflowScheduleRecord,
  WorkflowScheduleSave,
  WorkflowScheduleQuery,
  WorkflowScheduleClaimRequest,
  WorkflowScheduleWrite,
  WorkflowScheduleStore,
} from './workflow-store-schedules.js';
export type { WorkflowStoreTransaction, WorkflowStoreTransactionOptions } from './workflow-store-transactions.js';
export type {
  NewWorkflowStreamItem,
  WorkflowStreamAppend,
  WorkflowStreamAppendResult,
  WorkflowStreamLimits,
  WorkflowStreamPage,
  WorkflowStreamQuery,
  WorkflowStreamRecord,
  WorkflowStreamStore,
} from './workflow-store-streams.js';
export type {
  WorkflowPauseRequest,
  WorkflowPauseTarget,
  WorkflowPausedWorkflow,
  WorkflowPauseStore,
} from './workflow-store-pauses.js';
export type { WorkflowBulkChange, WorkflowBulkStore } from './workflow-store-bulk.js';
export { BULK_CHANGE_LIMIT } from './workflow-store-bulk.js';
export type {
  NewWorkflowCallback,
  WorkflowCallbackRecord,
  WorkflowCallbackSettle,
  WorkflowCallbackSettleResult,
  WorkflowCallbackState,
  WorkflowCallbackStore,
} from './workflow-store-callbacks.js';
export type {
  WorkflowDeclaredVersion,
  WorkflowProcessRecord,
  WorkflowProcessStore,
} from './workflow-store-processes.js';
