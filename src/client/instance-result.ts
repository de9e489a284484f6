import type { Observable } from 'rxjs';
import { deserializeError } from '../errors/serialize-error.js';
import { WorkflowClientClosedError } from '../errors/workflow-client-closed.error.js';
import { WorkflowTimeoutError } from '../errors/workflow-timeout.error.js';
import type { WorkflowEvent } from '../events/workflow-event.js';
import { FINISHED_STATUSES } from '../storage/workflow-instance.js';
import type { WorkflowInstanceDetails } from '../storage/workflow-store.js';

/** What waiting for an instance's result (its end) needs of the client. */
export interface InstanceResultSources {
  read(id: string): Promise<WorkflowInstanceDetails>;
  /** This process's events: its own executions' ends arrive here at once. */
  events: Observable<WorkflowEvent>;
  /**
   * The store's notifications of ends in any process, of every instance or of `id` alone (`null`
   * from the subscription: it has none).
   */
  listenForEnds(listener: (id: string | null) => void, id: string): Promise<(() => Promise<void>) | null>;
  /**
   * Asks the store that `id`'s end reach `listenForEnds()` in every process (a store may notify only
   * the ends asked for): `false` when it is finished or unknown already.
   */
  requestEndNotice(id: string): Promise<boolean>;
  /**
   * While this process runs `id` itself (its events then tell the end): resolves once that
   * execution no longer stands for the instance here; `null` when none does.
   */
  whileRunningHere(id: string): Promise<void> | null;
  /** Aborted when the application closes: a wait still going then rejects. */
  closing: AbortSignal;
  /** `worker.pollInterval`, in ms. */
  pollInterval: number;
}

const ENDS = new Set(['workflow-completed', 'workflow-failed', 'workflow-cancelled', 'workflow-compensation-failed']);

/**
 * Resolves to the instance's output once it `completed`, rejects with its error once it ended
 * otherwise. Woken at once by this process's events and by the store's notifications (an end in
 * another process: PostgreSQL's NOTIFY, MySQL's poll of the instances waited for); polling stays
 * the safety net: every `pollInterval` when notifications work, else at most every 500 ms. Rejects
 * with `WorkflowTimeoutError` after `limit` ms (real time), and with `WorkflowClientClosedError`
 * when the application closes first, so no waiting handle keeps a process (or a test runner) alive.
 *
 * The store is asked for the end's notification (`requestEndNotice`) once listening, after a read
 * found the instance unfinished, unless this process's own execution of it runs: its events tell
 * the end, and the store is asked only when that execution stops without one (it suspended, handed
 * back, lost its lease). So a start awaited where it runs costs the store nothing more.
 */
export async function waitForResult<O>(sources: InstanceResultSources, id: string, limit: number | null): Promise<O> {
  const { closing } = sources;
  const closed = (status: string | null) =>
    new WorkflowClientClosedError(
      `handle.result() for instance "${id}" stopped waiting: the application is closing (the instance ` +
        `${status === null ? '' : `is ${status} and `}carries on wherever a worker runs it). Read it later with getStatus().`,
    );
  // Called after the close, it reads once: a finished instance still answers, an unfinished one rejects.
  const closedAtStart = closing.aborted;
  /** `promise`, or `CLOSED` as soon as the application closes (a pool ending may strand a checkout). */
  const untilClosed = <T>(promise: Promise<T>): Promise<T | typeof CLOSED> =>
    closedAtStart
      ? promise
      : new Promise((resolve, reject) => {
          const onClose = () => resolve(CLOSED);
          if (closing.aborted) return onClose();
          closing.addEventListener('abort', onClose, { once: true });
          promise.then(
            (value) => {
              closing.removeEventListener('abort', onClose);
              resolve(value);
            },
            (error: unknown) => {
              closing.removeEventListener('abort', onClose);
              reject(error);
            },
          );
        });
  let nudged: boolean;
  let wake: (() => void) | null = null;
  const nudge = () => {
    nudged = true;
    wake?.();
  };
  /** This process's events told the end. */
  let endedHere = false;
  /**
   * An end was told (an event here, a notification) since the last read. A read that then finds the
   * instance unfinished saw it reopened (a retry), which cleared the store's ask: it asks again.
   */
  let endTold = false;
  const local = sources.events.subscribe((event) => {
    if ('id' in event && event.id === id && ENDS.has(event.type)) {
      endedHere = true;
      endTold = true;
      nudge();
    }
  });
  closing.addEventListener('abort', nudge);
  /** Whether the store must still be asked to notify the end (only worth it while listening). */
  let ask = false;
  /** This process's own execution of the instance runs: the store is asked only once it stops. */
  let runsHere = false;
  // Listening before the first read, so an end between that read and the wait is not missed.
  const listening = closedAtStart
    ? Promise.resolve(null)
    : sources
        .listenForEnds((ended) => {
          // After a reconnection the ask is made again: a server that restarted may have lost it.
          if (ended === null && !runsHere) ask = true;
          if (ended === id) endTold = true;
          if (ended === null || ended === id) nudge();
        }, id)
        .catch(() => null);
  let stopListening: (() => Promise<void>) | null = null;
  try {
    const subscribed = await untilClosed(listening);
    if (subscribed === CLOSED) throw closed(null);
    stopListening = subscribed;
    if (stopListening !== null) {
      const here = sources.whileRunningHere(id);
      runsHere = here !== null;
      ask = !runsHere;
      void here?.then(() => {
        runsHere = false;
        if (endedHere) return;
        ask = true;
        nudge();
      });
    }
    /** The last ask found the instance finished while a read found it unfinished: asked again at once, once. */
    let askedAgain = false;
    const started = Date.now();
    for (;;) {
      nudged = false;
      const reopened = endTold;
      endTold = false;
      const instance = await untilClosed(sources.read(id));
      if (instance === CLOSED) throw closed(null);
      if (instance.status === 'completed') return instance.output as O;
      if (FINISHED_STATUSES.includes(instance.status)) {
        throw deserializeError(
          instance.error ?? { name: 'Error', message: `Instance "${id}" ended as ${instance.status}.` },
        );
      }
      if (closing.aborted) throw closed(instance.status);
      if (reopened && stopListening !== null) ask = true;
      if (ask) {
        ask = false;
        // After the read: an instance already finished costs no ask. An end between the two makes
        // the ask answer `false` (the store orders them), and the instance is read again at once.
        const asked = await untilClosed(sources.requestEndNotice(id).catch(() => null));
        if (asked === CLOSED) throw closed(instance.status);
        if (asked !== true) ask = true;
        if (asked === false && !askedAgain) {
          askedAgain = true;
          continue;
        }
        if (asked === true) askedAgain = false;
      }
      // Until an ask was answered, an end elsewhere may go unheard: poll as a store that doesn't notify.
      const poll = stopListening !== null && !ask ? sources.pollInterval : Math.min(sources.pollInterval, 500);
      const left = limit === null ? poll : limit - (Date.now() - started);
      if (left <= 0)
        throw new WorkflowTimeoutError(`Instance "${id}" did not end within ${limit} ms (it is ${instance.status}).`);
      if (!nudged) {
        await new Promise<void>((resolve) => {
          const timer = setTimeout(resolve, Math.min(left, poll));
          wake = () => {
            clearTimeout(timer);
            resolve();
          };
        });
        wake = null;
      }
      if (closing.aborted) throw closed(instance.status);
    }
  } finally {
    local.unsubscribe();
    closing.removeEventListener('abort', nudge);
    if (stopListening) await stopListening().catch(() => undefined);
    else void listening.then((stop) => stop?.().catch(() => undefined));
  }
}

const CLOSED = Symbol('closed');
