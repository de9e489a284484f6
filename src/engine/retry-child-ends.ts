import { CHILD_ENDED_SIGNAL, type ChildEnded } from './child-support.js';
import { WorkflowInvalidStateError } from '../errors/workflow-invalid-state.error.js';
import { FINISHED_STATUSES, type WorkflowInstance } from '../storage/workflow-instance.js';
import type { NewWorkflowSignal, WorkflowInstanceDetails, WorkflowReopen } from '../storage/workflow-store.js';

/** What `childEndsToSend()` reads. */
export interface RetryChildReads {
  /** The child (`null`: gone), its payloads decoded for readers. */
  child(id: string): Promise<WorkflowInstance | null>;
  /** Whether the end signal of child `id` sent after `afterId` (the parent's start cursor) is stored. */
  hasEnd(id: string, afterId: number): Promise<boolean>;
}

/** What `childEnds()` found: the ends to send again, and every child the reopened parent waits for (`WorkflowReopen.awaitedChildren`). */
export interface RetryChildEnds {
  send: NewWorkflowSignal[];
  awaited: string[];
}

/**
 * The retried parent `current` waits again for the end of each child it started and whose end its
 * reopened journal (`reopen`) does not hold: a child it never took the end of (it ended first, say
 * cancelled during a sleep), or one whose end the retry takes again. That end reaches it as the
 * child's `$child-ended` signal, which `purge()` may have deleted once the parent had ended. So,
 * before the reopen, for each such child:
 * - unfinished, or finished with its end stored: nothing to do (while the parent is unfinished,
 *   `purge()` and `delete()` keep both);
 * - `completed`, its end purged: its end is sent again from the child's row (returned here; a
 *   completed child never runs again, so that end is final);
 * - failed, cancelled or `compensation_failed`, its end purged: refused, retry the child first
 *   (its next end reaches the parent): an end sent from the row could outlive a retry of the
 *   child made meanwhile, and stand in for the end it will have (ends are deduplicated by the
 *   child's id);
 * - gone (deleted, or purged with the parent's end): refused, for its end, if still stored,
 *   would no longer be kept for the parent (`purge()` finds the parent through the child).
 * Without this the parent would wait for that end forever. A `purge()` or `delete()` after these
 * reads is the store's to catch: the reopen refuses unless each child in `awaited` can still end it.
 */
export async function childEnds(
  current: WorkflowInstanceDetails,
  reopen: WorkflowReopen,
  reads: RetryChildReads,
): Promise<RetryChildEnds> {
  const journal = current.journal ?? [];
  const reset = new Set(reopen.entries.map((e) => e.name));
  const taken = new Set<string>();
  for (const e of journal) {
    if (
      e.kind === 'signal' &&
      e.state === 'completed' &&
      e.signal?.name === CHILD_ENDED_SIGNAL &&
      e.signal.key &&
      !reset.has(e.name)
    )
      taken.add(e.signal.key);
  }
  const ends: NewWorkflowSignal[] = [];
  const awaited: string[] = [];
  for (const e of journal) {
    const id = e.kind === 'child' && e.state === 'completed' ? e.childId : undefined;
    if (!id || taken.has(id)) continue;
    awaited.push(id);
    const child = await reads.child(id);
    const named = `Instance "${current.id}" can't be retried: its child "${id}" (started as "${e.name}")`;
    if (child === null) {
      throw new WorkflowInvalidStateError(
        `${named} is gone (deleted or purged) and the parent has not taken its end, which nothing keeps for it without the child. ` +
          'Start a new instance instead.',
      );
    }
    if (!FINISHED_STATUSES.includes(child.status) || (await reads.hasEnd(id, current.signalCursor))) continue;
    if (child.status !== 'completed') {
      throw new WorkflowInvalidStateError(
        `${named} ended ${child.status}, and its end, which the parent has not taken, was purged. ` +
          'Retry the child first: its next end reaches the parent.',
      );
    }
    if (child.unreadable?.fields.includes('output')) {
      throw new WorkflowInvalidStateError(
        `${named} completed, its end was purged, and no configured codec can read its output to send that end again.`,
      );
    }
    const payload: ChildEnded = { status: 'completed', output: child.output ?? null, error: null };
    ends.push({ name: CHILD_ENDED_SIGNAL, key: id, dedupeId: id, payload, now: reopen.now });
  }
  return { send: ends, awaited };
}
