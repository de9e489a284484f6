import { UNKNOWN_FAILURE } from './end-errors.js';
import { CHILD_ENDED_SIGNAL, type ChildEnded } from './child-support.js';
import { sameJson } from './json-value.js';
import { WorkflowInvalidStateError } from '../errors/workflow-invalid-state.error.js';
import { FINISHED_STATUSES, type WorkflowInstance, type WorkflowJournalEntry } from '../storage/workflow-instance.js';
import type { WorkflowStorage } from '../storage/workflow-storage.js';
import type { WorkflowInstanceDetails, WorkflowReopen } from '../storage/workflow-store.js';
import { childEnds } from './retry-child-ends.js';

/** How many times `retryInstance()` reads the instance again after the store refused its reopen. */
const REOPEN_TRIES = 3;

/**
 * `WorkflowClient.retry()`: reads the instance with its journal (`read`) and reopens it (see
 * `reopenForRetry()`). A refused reopen is read again: another retry may have won (the status then
 * says so), or a `purge()` or `delete()` removed a child's end the parent waits for after it was
 * checked (read again, that end is sent again, or the retry refused with the reason).
 */
export async function retryInstance(
  storage: WorkflowStorage,
  id: string,
  read: () => Promise<WorkflowInstanceDetails>,
  now: () => number,
): Promise<void> {
  for (let attempt = 1; attempt <= REOPEN_TRIES; attempt++) {
    const current = await read();
    if (await reopenForRetry(storage, current, now())) return;
  }
  throw new WorkflowInvalidStateError(
    `Instance "${id}" changed while it was being retried (another retry won, it is running, or purge() or delete() kept removing a child or a child's end it waits for). ` +
      'Read its status and try again.',
  );
}

/**
 * Reopens `current` (read with its journal) at `now`, after sending again the ends of its completed
 * children that `purge()` removed and it still waits for (see `childEnds()`), and asking the store
 * to check that every child it waits for can still end it. Sent first, so a send that fails reopens
 * nothing; a repeated send stores nothing (ends are deduplicated by the child's id). Resolves to
 * whether the reopen landed.
 */
async function reopenForRetry(
  storage: WorkflowStorage,
  current: WorkflowInstanceDetails,
  now: number,
): Promise<boolean> {
  const reopen = await retryReopen(current, now, (child) => storage.get(child, { readable: true }));
  if (current.status !== 'compensation_failed') {
    const { send, awaited } = await childEnds(current, reopen, {
      child: (id) => storage.get(id, { readable: true }),
      hasEnd: async (id, afterId) =>
        (await storage.signals({ name: CHILD_ENDED_SIGNAL, key: id, afterId, upToId: Number.MAX_SAFE_INTEGER }))
          .length > 0,
    });
    for (const end of send) await storage.signal(end);
    if (awaited.length > 0) reopen.awaitedChildren = awaited;
  }
  return storage.reopen(current.id, reopen);
}

/**
 * What `WorkflowClient.retry()` asks the store to reopen: the finished instance `current` (read with
 * its journal) made ready to run again at `now`. `readChild` reads a child (`null`: gone), for the
 * ends of children it took. Throws `WorkflowInvalidStateError` for a status that can't be retried.
 */
async function retryReopen(
  current: WorkflowInstanceDetails,
  now: number,
  readChild: (id: string) => Promise<WorkflowInstance | null>,
): Promise<WorkflowReopen> {
  const journal = current.journal ?? [];
  let status: WorkflowReopen['status'];
  let entries: WorkflowJournalEntry[];
  let error = null;
  if (current.status === 'failed' || current.status === 'cancelled') {
    status = 'pending';
    entries = journal
      .filter(
        (e) =>
          (e.kind === 'step' && (e.state === 'failed' || e.compensated)) ||
          (e.kind === 'compensation' && e.state !== 'waiting'),
      )
      .map((e) => reset(e, now));
    // A child's end that failed the parent is taken again if the child was retried since: its end
    // then is what the parent must see (the child's reopen retracted the old one).
    for (const e of journal) if (await childMovedOn(e, readChild)) entries.push(resetWait(e, now));
  } else if (current.status === 'compensation_failed') {
    // The store keeps a cancel's flag on this reopen: the engine then ends the instance cancelled.
    status = 'compensating';
    entries = journal.filter((e) => e.kind === 'compensation' && e.state === 'failed').map((e) => reset(e, now));
    const { compensation: _compensation, ...reason } = current.error ?? UNKNOWN_FAILURE;
    error = reason as typeof current.error;
  } else {
    throw new WorkflowInvalidStateError(
      `Instance "${current.id}" is ${current.status}: only failed, cancelled or compensation_failed instances can be retried.`,
    );
  }
  return {
    expect: { status: current.status, runs: current.runs },
    status,
    error,
    deadline: current.deadline === null ? undefined : now + runTimeout(current),
    entries,
    // A child ends again after a retry: its parent must wait for that end, not take the one it had,
    // and the new end must not be deduplicated against it (ends are deduplicated by the child's id).
    retractSignal: current.parentId === null ? undefined : { name: CHILD_ENDED_SIGNAL, dedupeId: current.id },
    now,
  };
}

/**
 * The run timeout that starts again at the retry: the one the instance was started with. For an
 * instance created before the store kept it, the time from its creation to its deadline (exact
 * unless it was started with `startAt`, which was not stored).
 */
function runTimeout(current: WorkflowInstanceDetails): number {
  return current.timeout ?? Math.max(0, current.deadline! - current.createdAt);
}

function reset(entry: WorkflowJournalEntry, now: number): WorkflowJournalEntry {
  const { value: _value, error: _error, compensated: _compensated, ...rest } = entry;
  return { ...rest, state: 'waiting', attempts: 0, wakeAt: null, updatedAt: now };
}

/** A wait made to read its signal again: without the value and the id it took. */
function resetWait(entry: WorkflowJournalEntry, now: number): WorkflowJournalEntry {
  const { value: _value, error: _error, signalId: _signalId, ...rest } = entry;
  return { ...rest, state: 'waiting', wakeAt: null, updatedAt: now };
}

/**
 * Whether `entry` is a child's end the parent took that was not a completion (the child failed or
 * was cancelled) and that the child has moved on from: it runs again, or ended otherwise. An end
 * the child still stands at is kept as recorded: read again it would be the same, or be gone once
 * `purge()` removed its signal, and the parent would then wait for it forever. So is one no codec
 * could read (`undefined`), and one of a child that was deleted.
 */
async function childMovedOn(
  entry: WorkflowJournalEntry,
  readChild: (id: string) => Promise<WorkflowInstance | null>,
): Promise<boolean> {
  const childId = entry.signal?.key;
  if (entry.kind !== 'signal' || entry.state !== 'completed' || entry.signal?.name !== CHILD_ENDED_SIGNAL || !childId)
    return false;
  const ended = entry.value as ChildEnded | null | undefined;
  if (typeof ended?.status !== 'string' || ended.status === 'completed') return false;
  const child = await readChild(childId);
  if (child === null) return false;
  return (
    !FINISHED_STATUSES.includes(child.status) || child.status !== ended.status || !sameJson(child.error, ended.error)
  );
}
