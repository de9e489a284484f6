import { randomUUID } from 'node:crypto';
import {
  FINISHED_STATUSES,
  type WorkflowJournalEntry,
  type WorkflowStatus,
  type WorkflowWait,
} from '../storage/workflow-instance.js';
import type {
  NewWorkflowInstance,
  NewWorkflowSignal,
  WorkflowClaimRequest,
  WorkflowInstanceDetails,
  WorkflowScheduleSave,
  WorkflowStore,
} from '../storage/workflow-store.js';

/**
 * The contract suite's clock: every test passes explicit times from here. Tests other than purge's
 * stay at or above it, so a purge test's cutoffs (below it) never reach another test's rows.
 */
export const BASE_TIME = 1_700_000_000_000;

/** Purge tests live below `BASE_TIME`, each in its own span, later tests higher (see `purgeSpan()`). */
const PURGE_TIME = 1_000_000_000_000;
const PURGE_SPAN = 1_000_000_000;

const run = randomUUID().slice(0, 8);
let scopes = 0;
let purgeSpans = 0;

/**
 * Names unique to one test (and one run), so a store shared by several tests, or kept between runs,
 * still gives each test only its own instances, workflows, signals and schedules.
 */
export interface TestScope {
  prefix: string;
  /** The test's main workflow name: claims filter on it, so no other test's instance is claimed. */
  workflow: string;
  id(name: string): string;
  signal(name: string): string;
}

/**
 * `name` made unique to this run, for the workflows of the engine scenarios: their `drain()` then
 * claims no instance that an earlier run left due in a store kept between runs.
 */
export function runWorkflowName(name: string): string {
  return `${run}:${name}`;
}

export function testScope(): TestScope {
  const prefix = `c${run}-${++scopes}`;
  return {
    prefix,
    workflow: `${prefix}:wf`,
    id: (name) => `${prefix}:${name}`,
    signal: (name) => `${prefix}:signal:${name}`,
  };
}

/** A new instance of `workflow` (version 1, due at `BASE_TIME`) with `overrides`. */
export function newInstance(
  id: string,
  workflow: string,
  overrides: Partial<NewWorkflowInstance> = {},
): NewWorkflowInstance {
  return {
    id,
    workflow,
    version: 1,
    input: { order: id, lines: [1, 2] },
    deadline: null,
    now: BASE_TIME,
    ...overrides,
  };
}

/** A claim of `workflow` version 1 by `worker-1` at `BASE_TIME`, lease 30 s, with a fresh token. */
export function claimRequest(workflow: string, overrides: Partial<WorkflowClaimRequest> = {}): WorkflowClaimRequest {
  const now = overrides.now ?? BASE_TIME;
  return {
    owner: 'worker-1',
    token: randomUUID(),
    now,
    leaseUntil: now + 30_000,
    limit: 100,
    workflows: [{ name: workflow, version: 1 }],
    ...overrides,
  };
}

/** A completed step entry; JSON-safe (no `undefined` fields), as every store must keep it. */
export function journalEntry(name: string, overrides: Partial<WorkflowJournalEntry> = {}): WorkflowJournalEntry {
  return {
    name,
    kind: 'step',
    state: 'completed',
    value: { result: name },
    attempts: 1,
    createdAt: BASE_TIME,
    updatedAt: BASE_TIME,
    ...overrides,
  };
}

export function newSignal(name: string, overrides: Partial<NewWorkflowSignal> = {}): NewWorkflowSignal {
  return { name, key: null, dedupeId: null, payload: { from: name }, now: BASE_TIME, ...overrides };
}

export function scheduleSave(
  id: string,
  workflow: string,
  overrides: Partial<WorkflowScheduleSave> = {},
): WorkflowScheduleSave {
  return {
    id,
    workflow,
    declared: false,
    spec: { every: 60_000 },
    input: { from: id },
    paused: false,
    wakeAt: BASE_TIME,
    state: { last: null },
    expectRevision: null,
    releaseLease: false,
    now: BASE_TIME,
    ...overrides,
  };
}

/** What a test compares to prove a call changed nothing: the instance with its waits and journal. */
export function snapshot(store: WorkflowStore, id: string): Promise<WorkflowInstanceDetails | null> {
  return store.get(id, { journal: true });
}

/**
 * Creates `init` in a workflow of its own and leases it; returns the token and the claim's signal
 * cursor. The instance's workflow is `init.workflow` unless overridden, so give each leased
 * instance a workflow with nothing else due in it (or arrange the order) when it matters.
 */
export async function lease(
  store: WorkflowStore,
  init: NewWorkflowInstance,
  overrides: Partial<WorkflowClaimRequest> = {},
): Promise<{ token: string; cursor: number }> {
  await store.create(init);
  const request = claimRequest(init.workflow, {
    now: init.now,
    limit: 1,
    workflows: [{ name: init.workflow, version: init.version }],
    ...overrides,
  });
  const claim = await store.claim(request);
  if (claim.instances.length !== 1 || claim.instances[0]!.id !== init.id) {
    throw new Error(
      `Test setup: expected to lease ${init.id}, claimed [${claim.instances.map((i) => i.id).join(', ')}].`,
    );
  }
  return { token: request.token, cursor: claim.lastSignalId };
}

/** How `settle()` hands an instance back. */
export interface SettleOptions {
  /** The write's `now` (its `updatedAt`); default `init.now`. */
  at?: number;
  /** Default `null`: nothing wakes it but a signal or a cancel. */
  wakeAt?: number | null;
  waits?: WorkflowWait[];
}

/** Leases `init` and hands it back with `status` (a finished, or parked, instance). */
export async function settle(
  store: WorkflowStore,
  init: NewWorkflowInstance,
  status: WorkflowStatus,
  options: SettleOptions = {},
): Promise<void> {
  const at = options.at ?? init.now;
  const { token, cursor } = await lease(store, init);
  const ok = await store.write(init.id, token, {
    now: at,
    entries: [journalEntry('step-1', { createdAt: at, updatedAt: at })],
    status,
    ...(status === 'failed' ? { error: { name: 'Error', message: 'boom' } } : {}),
    release: { wakeAt: options.wakeAt ?? null, waits: options.waits ?? [], signalCursor: cursor },
  });
  if (!ok) throw new Error(`Test setup: could not settle ${init.id}.`);
}

/**
 * The start of a purge test's own time span, below `BASE_TIME` and above every earlier purge
 * test's. On a store shared across tests (or kept from an earlier run) it first purges what was
 * left in and below that span, after a fence signal so none of those signals is still the newest:
 * the test then counts only what it made.
 */
export async function purgeSpan(store: WorkflowStore): Promise<number> {
  const start = PURGE_TIME + ++purgeSpans * PURGE_SPAN;
  await store.signal(newSignal(`$contract-fence-${run}`, { now: BASE_TIME }));
  for (;;) {
    const purged = await store.purge({ statuses: [...FINISHED_STATUSES], before: start + PURGE_SPAN, limit: 1000 });
    if (purged.instances + purged.signals + purged.rateLimits + purged.debounceKeys === 0) return start;
  }
}

/** The last signal id, read the way an execution does (a claim that takes nothing). */
export async function lastSignalId(store: WorkflowStore): Promise<number> {
  const claim = await store.claim(claimRequest(`$contract-nothing-${run}`));
  return claim.lastSignalId;
}

/** The instance with its waits and journal; throws when it doesn't exist. */
export async function details(store: WorkflowStore, id: string): Promise<WorkflowInstanceDetails> {
  const found = await store.get(id, { journal: true });
  if (!found) throw new Error(`Expected instance ${id} to exist.`);
  return found;
}

/** `[0, 1, ..., n - 1]`. */
export function range(n: number): number[] {
  return Array.from({ length: n }, (_, i) => i);
}

/** `i` as three digits, so ids sort in the order they were made. */
export function pad(i: number): string {
  return String(i).padStart(3, '0');
}

/** The ids a claim returned, sorted: which ones it took is the rule, not the order it returns them in. */
export function idsOf(claim: { instances: Array<{ id: string }> }): string[] {
  return claim.instances.map((i) => i.id).sort();
}
