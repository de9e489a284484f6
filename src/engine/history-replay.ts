import type { WorkflowStorage } from '../storage/workflow-storage.js';
import type { WorkflowInstance, WorkflowJournalEntry, WorkflowJournalKind } from '../storage/workflow-instance.js';
import type { RunEnd } from './execution-outcome.js';
import { isPatchMarker } from './patch-markers.js';
import { ReplayTrail, type TrailFindings } from './replay-trail.js';
import type { RunnableWorkflow } from './workflow-engine.js';
import { WorkflowExecution, type ExecutionDeps } from './workflow-execution.js';
import type { WorkflowHistory } from './workflow-history.js';
import { NO_OBSERVER } from './workflow-observer.js';

/**
 * Why a replay does not match its journal:
 * - `not-reached`: the journal has an entry the code never reaches (a step removed, or moved behind a condition);
 * - `replaced`: the code reaches an operation the journal lacks where the journal has another (a renamed step, a new step inserted);
 * - `kind-changed`: a name the journal recorded as one kind (a step) is reached as another (a sleep);
 * - `order-changed`: the code reaches entries in another order than the journal recorded them;
 * - `name-reused`: the code reaches one name twice;
 * - `patch-deprecated`: `ctx.deprecatePatch()` met an instance that went past that point without the patch;
 * - `run-failed`: `run()` threw where the instance had not failed;
 * - `unknown-workflow`: the application has no such workflow at the instance's version.
 */
export type WorkflowReplayDivergence =
  | 'not-reached'
  | 'replaced'
  | 'kind-changed'
  | 'order-changed'
  | 'name-reused'
  | 'patch-deprecated'
  | 'run-failed'
  | 'unknown-workflow';

/** How one instance's history replays against the current code. */
export type WorkflowReplayReport =
  | {
      id: string;
      workflow: string;
      version: number;
      result: 'ok';
      /** Where the replay got to: `run()` returned, it threw a recorded failure, or it stopped where the journal ends. */
      end: 'completed' | 'failed' | 'suspended';
    }
  | {
      id: string;
      workflow: string;
      version: number;
      result: 'diverged';
      reason: WorkflowReplayDivergence;
      /** The first journal entry that differs (`null` when none does: a new name reached twice, an unknown workflow). */
      entry: string | null;
      /** What the code reached instead, when it reached something: the operation's name. */
      reached: string | null;
      /** What differs, and what to ship instead. */
      message: string;
    };

/** What a replay needs of the application: its workflows by name and version. */
export interface ReplayDefinitions {
  get(name: string, version: number): RunnableWorkflow | undefined;
}

const NO_LIMITS = { warnEntries: Infinity, warnBytes: Infinity, maxEntries: Infinity, maxBytes: Infinity };

/**
 * Where a replay's writes go: nowhere. A replay runs in replay-only mode (a step, sleep, wait or
 * child the journal lacks parks instead of running), and what it would still record (a value, a
 * patch marker) is accepted and dropped, so nothing reaches the store whatever the code does.
 */
const NO_STORAGE = {
  write: () => Promise.resolve(true),
  signals: () => Promise.resolve([]),
  prepareEntry: () => null,
  runsTransactions: true,
  storeName: 'a history replay',
  // The body's stream writes were stored when the instance made them; a replay's go nowhere.
  streams: { unsupported: () => null, append: () => Promise.resolve(null) },
  // A callback the journal lacks is never created (its wait parks first); one it holds needs no store.
  callbacks: {
    unsupported: () => null,
    create: () => Promise.resolve(undefined),
    get: () => Promise.resolve(null),
    expire: () => Promise.resolve(false),
  },
} as unknown as WorkflowStorage;

/** What a replay that keeps going (code awaiting something no journal entry settles) is given, in ms. */
const STALL_LIMIT = 10_000;

/**
 * Replays one history against `definitions` (the current code) without running a step, a sleep or
 * a child and without writing anywhere, and reports whether the code still matches the journal, or
 * the first entry that differs and why. Framework-free: `replayHistory()` and `replayStored()`
 * (from `/testing`) call it with an application's registry.
 */
export async function replayWorkflowHistory(
  definitions: ReplayDefinitions,
  history: WorkflowHistory,
): Promise<WorkflowReplayReport> {
  const { id, workflow, version } = history.instance;
  const head = { id, workflow, version };
  const definition = definitions.get(workflow, version);
  if (!definition) {
    return diverged(
      head,
      'unknown-workflow',
      null,
      null,
      `This application has no workflow "${workflow}" at version ${version}, so instance "${id}" could not run here. ` +
        'Keep the version registered until its instances finish.',
    );
  }
  const instance: WorkflowInstance = {
    ...history.instance,
    leaseToken: 'history-replay',
    leaseOwner: null,
    leaseUntil: null,
    cancelRequested: false,
    terminateRequested: false,
    deadline: null,
  };
  const at = history.instance.updatedAt;
  const deps: ExecutionDeps = {
    storage: NO_STORAGE,
    clock: { now: () => at },
    journalLimits: NO_LIMITS,
    retry: definition.retry,
    emit: () => undefined,
    warn: () => undefined,
    observe: NO_OBSERVER.execution(instance),
    resolveChild: () => {
      throw new Error('A history replay starts no child.');
    },
    createChild: () => Promise.reject(new Error('A history replay starts no child.')),
  };
  const exec = new WorkflowExecution(instance, history.journal, instance.signalCursor, deps, true);
  const journal = new Map<string, WorkflowJournalEntry>();
  const positions = new Map<string, number>();
  for (const entry of history.journal) {
    journal.set(entry.name, entry);
    if (entry.kind !== 'compensation' && !isPatchMarker(entry.name)) positions.set(entry.name, positions.size);
  }
  const trail = new ReplayTrail(exec.context, journal, positions);
  let stall: NodeJS.Timeout | undefined;
  try {
    const outcome = await Promise.race([
      exec.run(() => definition.instance.run(trail.context, history.instance.input)),
      new Promise<null>((resolve) => (stall = setTimeout(() => resolve(null), STALL_LIMIT))),
    ]);
    if (outcome === null) {
      return diverged(
        head,
        'run-failed',
        null,
        null,
        `run() of instance "${id}" kept waiting on something that is no ctx operation for ${STALL_LIMIT} ms. ` +
          'Await only ctx operations in run(); do other work in steps.',
      );
    }
    return judge(head, history, exec, trail.findings(), outcome.run, outcome.fatal?.message ?? null);
  } finally {
    clearTimeout(stall);
    exec.close();
  }
}

type Head = { id: string; workflow: string; version: number };

function judge(
  head: Head,
  history: WorkflowHistory,
  exec: WorkflowExecution,
  found: TrailFindings,
  run: RunEnd,
  fatal: string | null,
): WorkflowReplayReport {
  const { journal } = history;
  const kindOf = (name: string) => journal.find((entry) => entry.name === name)?.kind ?? 'step';
  if (found.kindChanged) {
    const { name, recorded, reached } = found.kindChanged;
    return diverged(
      head,
      'kind-changed',
      name,
      name,
      `The journal recorded "${name}" as a ${recorded}; the code now reaches it as a ${reached}. Ship this change as a new workflow version.`,
    );
  }
  if (found.reused) {
    return diverged(
      head,
      'name-reused',
      journal.some((entry) => entry.name === found.reused) ? found.reused : null,
      found.reused,
      `The code reaches "${found.reused}" twice; names must be unique per instance.`,
    );
  }
  if (found.deprecated !== null) {
    return diverged(
      head,
      'patch-deprecated',
      null,
      `$patch:${found.deprecated}`,
      fatal ??
        `Instance "${head.id}" went past patch "${found.deprecated}" without it; keep ctx.patched() until such instances finish.`,
    );
  }
  if (found.order) {
    const { name, after } = found.order;
    return diverged(
      head,
      'order-changed',
      name,
      name,
      `The code reaches ${describe(kindOf(name), name)} after ${describe(kindOf(after), after)}, but the journal recorded "${name}" first. ` +
        'Ship a change of order as a new workflow version, or behind ctx.patched().',
    );
  }
  const missing = exec.unvisited();
  if (missing.length > 0) {
    const first = missing[0]!;
    if (found.firstNew) {
      const { name, kind } = found.firstNew;
      return diverged(
        head,
        'replaced',
        first,
        name,
        `The code reaches ${describe(kind, name)}, which the journal lacks, where the journal has ${describe(kindOf(first), first)} ` +
          '(a renamed or inserted operation). Put the change behind ctx.patched(), or ship it as a new workflow version.',
      );
    }
    return diverged(
      head,
      'not-reached',
      first,
      null,
      `The journal has ${describe(kindOf(first), first)}, which the code never reaches (removed, or moved behind a condition). ` +
        'Put the removal behind ctx.patched(), or ship it as a new workflow version.',
    );
  }
  if (fatal !== null) return diverged(head, 'name-reused', null, null, fatal);
  if (run.kind === 'failed') {
    const failedBefore = ['failed', 'compensating', 'compensation_failed', 'cancelled'].includes(
      history.instance.status,
    );
    if (failedBefore) return { ...head, result: 'ok', end: 'failed' };
    const error = run.error instanceof Error ? `${run.error.name}: ${run.error.message}` : String(run.error);
    return diverged(
      head,
      'run-failed',
      null,
      null,
      `run() threw where the instance had not failed: ${error}. The code now fails on this instance's journal.`,
    );
  }
  return { ...head, result: 'ok', end: run.kind === 'completed' ? 'completed' : 'suspended' };
}

function describe(kind: WorkflowJournalKind, name: string): string {
  return `${kind === 'value' ? 'value' : kind === 'signal' ? 'wait' : kind} "${name}"`;
}

function diverged(
  head: Head,
  reason: WorkflowReplayDivergence,
  entry: string | null,
  reached: string | null,
  message: string,
): WorkflowReplayReport {
  return { ...head, result: 'diverged', reason, entry, reached, message };
}
