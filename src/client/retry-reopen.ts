import { CHILD_ENDED_SIGNAL, type ChildEnded } from '../engine/child-support.js';
import { WorkflowInvalidStateError } from '../errors/workflow-invalid-state.error.js';
import type { WorkflowJournalEntry } from '../storage/workflow-instance.js';
import type { WorkflowInstanceDetails, WorkflowReopen } from '../storage/workflow-store.js';

/**
 * What `WorkflowClient.retry()` asks the store to reopen: the finished instance `current` (read with
 * its journal) made ready to run again at `now`. Throws `WorkflowInvalidStateError` for a status
 * that can't be retried.
 */
export function retryReopen(current: WorkflowInstanceDetails, now: number): WorkflowReopen {
  const journal = current.journal ?? [];
  let status: WorkflowReopen['status'];
  let entries: WorkflowJournalEntry[];
  let error = null;
  if (current.status === 'failed' || current.status === 'cancelled') {
    status = 'pending';
    entries = journal
      .filter((e) => (e.kind === 'step' && (e.state === 'failed' || e.compensated)) || (e.kind === 'compensation' && e.state !== 'waiting'))
      .map((e) => reset(e, now));
    // A child's end that failed the parent is taken again: the child may have been retried since,
    // and its end then is what the parent must see (the retried child's reopen removed the old one).
    for (const e of journal) if (isFailedChildEnd(e)) entries.push(resetWait(e, now));
  } else if (current.status === 'compensation_failed') {
    status = 'compensating';
    entries = journal.filter((e) => e.kind === 'compensation' && e.state === 'failed').map((e) => reset(e, now));
    const { compensation: _compensation, ...reason } = current.error ?? { name: 'Error', message: 'Unknown failure.' };
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

/** A child's end the parent took that was not a completion (the child failed or was cancelled). */
function isFailedChildEnd(entry: WorkflowJournalEntry): boolean {
  if (entry.kind !== 'signal' || entry.state !== 'completed' || entry.signal?.name !== CHILD_ENDED_SIGNAL) return false;
  // An end no codec could read (`undefined`) is left as recorded.
  const ended = entry.value as ChildEnded | null | undefined;
  return typeof ended?.status === 'string' && ended.status !== 'completed';
}
