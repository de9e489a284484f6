import { randomUUID } from 'node:crypto';
import { sameJson, toJsonValue } from '../engine/json-value.js';
import { WorkflowAlreadyStartedError } from '../errors/workflow-already-started.error.js';
import { invalidInput } from '../errors/workflow-input-error.js';
import { WorkflowNotFoundError } from '../errors/workflow-not-found.error.js';
import { shownValue } from '../errors/shown-value.js';
import { checkOptions } from '../options/known-keys.js';
import type { WorkflowInstance, WorkflowJournalEntry } from '../storage/workflow-instance.js';
import type { WorkflowStorage } from '../storage/workflow-storage.js';
import type { WorkflowFork } from '../storage/workflow-store.js';

/** `fork()`'s options. */
export interface WorkflowForkOptions {
  /**
   * The step (or sleep, wait, child, transaction: any name the workflow gave) to run again from:
   * the fork's journal is the source's entries recorded before it, so it and everything after it
   * run again. Default: from the top (an empty journal).
   */
  fromStep?: string;
  /** The fork's id. Default: a random UUID. Forking again with the same id, source and step returns that fork. */
  id?: string;
  /** The fork's input. Default: the source's. */
  input?: unknown;
  /** The version the fork runs on. Default: the source's. A worker that has that version claims it. */
  version?: number;
  /** The application's transaction handle, as for `start()`: the fork commits or rolls back with it. */
  transaction?: unknown;
}

const FORK_OPTIONS = ['fromStep', 'id', 'input', 'version', 'transaction'];

/** What a fork needs besides the storage: the clock, the trace context its start opens, and how it is stored. */
export interface ForkContext {
  now(): number;
  traceContext(workflow: string, id: string): Record<string, string> | null;
  /** Stores the fork (`WorkflowStorage.fork()`, and the loop told of it). */
  create(fork: WorkflowFork, transaction: unknown): Promise<{ instance: WorkflowInstance; created: boolean }>;
}

/**
 * `WorkflowClient.fork()` (and the CLI's `fork`): reads the source with its journal, copies the
 * entries before `fromStep` (see `forkedJournal()`), and creates the fork with them in one store
 * call. The source is never written. Resolves to the fork as stored and whether this call made it.
 */
export async function forkInstance(
  storage: WorkflowStorage,
  sourceId: string,
  options: WorkflowForkOptions,
  context: ForkContext,
): Promise<{ instance: WorkflowInstance; created: boolean }> {
  checkOptions(options, FORK_OPTIONS, 'fork() options');
  if (typeof sourceId !== 'string' || sourceId === '')
    throw invalidInput(`Invalid fork() id ${shownValue(sourceId)}: pass the id of the instance to fork.`);
  const { fromStep, version } = options;
  if (fromStep !== undefined && (typeof fromStep !== 'string' || fromStep === ''))
    throw invalidInput(`Invalid fork() option "fromStep": ${shownValue(fromStep)}. Use a step name, or leave it out.`);
  if (version !== undefined && (!Number.isInteger(version) || version < 1))
    throw invalidInput(`Invalid fork() option "version": ${shownValue(version)}. Use a whole number, 1 or more.`);
  const id = options.id ?? randomUUID();
  if (typeof id !== 'string' || id.trim() === '')
    throw invalidInput(`Invalid fork() option "id": ${shownValue(id)}. Use a non-empty string.`);
  const source = await storage.get(sourceId, { journal: true });
  if (!source) throw new WorkflowNotFoundError(`No workflow instance has the id "${sourceId}".`);
  const entries = forkedJournal(source.id, source.journal ?? [], fromStep);
  const input =
    'input' in options
      ? (toJsonValue(options.input, `The input of the fork of "${source.id}"`, 'input') ?? null)
      : source.input;
  const now = context.now();
  const from = { id: source.id, step: fromStep ?? null };
  const fork: WorkflowFork = {
    instance: {
      id,
      workflow: source.workflow,
      version: version ?? source.version,
      input,
      concurrencyKey: source.concurrencyKey,
      rateLimitKey: source.rateLimitKey,
      priority: source.priority,
      deadline: source.timeout === null ? null : now + source.timeout,
      timeout: source.timeout,
      now,
      traceContext: context.traceContext(source.workflow, id),
    },
    from,
    entries,
  };
  const result = await context.create(fork, options.transaction);
  if (!result.created) assertSameFork(result.instance, fork);
  return result;
}

/**
 * The journal a fork of `source` from `fromStep` starts with: the entries recorded before it, in
 * order, less what must run again in the fork:
 * - compensations (the fork has undone nothing), and steps whose compensation ran (their effects
 *   were undone, so they run again, as on a retry);
 * - a child whose end the source had not taken by then, with its end's wait: the fork starts its
 *   own child when it reaches it (a new id, `<fork id>/<name>`), for the source's child ends into
 *   the source, never into the fork. A child whose end was taken keeps its recorded outcome.
 * Taken signals stay taken (their payloads are in the copied waits); the fork's signal cursor is
 * the last signal id at the fork, so new waits take only signals sent after it.
 * Throws a marked `TypeError` (nothing stored) when `fromStep` names nothing in the journal.
 */
export function forkedJournal(
  source: string,
  journal: readonly WorkflowJournalEntry[],
  fromStep: string | undefined,
): WorkflowJournalEntry[] {
  if (fromStep === undefined) return [];
  const at = fromStep.startsWith('$') ? -1 : journal.findIndex((entry) => entry.name === fromStep);
  if (at < 0) {
    const names = journal.filter((e) => !e.name.startsWith('$')).map((e) => JSON.stringify(e.name));
    throw invalidInput(
      `Instance "${source}" has no step "${fromStep}" in its journal, so it can't be forked from there. ` +
        (names.length > 0
          ? `Its steps: ${names.slice(0, 20).join(', ')}${names.length > 20 ? ', ...' : ''}.`
          : 'Its journal is empty.') +
        ' Leave fromStep out to fork from the top.',
    );
  }
  const before = journal.slice(0, at);
  const taken = new Set(
    before.filter((e) => e.name.startsWith(CHILD_END_WAIT) && e.state !== 'waiting').map((e) => e.name),
  );
  return before.filter((entry) => {
    if (entry.kind === 'compensation') return false;
    if (entry.kind === 'step' && entry.compensated) return false;
    if (entry.kind === 'child') return taken.has(CHILD_END_WAIT + entry.name);
    if (entry.name.startsWith(CHILD_END_WAIT)) return taken.has(entry.name);
    return true;
  });
}

/** The journal name of the wait for a child's end (`child-support.ts`): `$child:<the child's name>`. */
const CHILD_END_WAIT = '$child:';

/** A fork of an id that exists returns it only when it is the same fork (same workflow, source and step): else `WorkflowAlreadyStartedError`. */
function assertSameFork(existing: WorkflowInstance, requested: WorkflowFork): void {
  const from = existing.forkedFrom;
  if (
    existing.workflow === requested.instance.workflow &&
    from?.id === requested.from.id &&
    from.step === requested.from.step &&
    sameJson(existing.input, requested.instance.input)
  )
    return;
  throw new WorkflowAlreadyStartedError(
    `Instance "${requested.instance.id}" already exists and is not this fork of "${requested.from.id}". ` +
      'Use another id, or leave the id out for a new one.',
    requested.instance.id,
  );
}
