import { shownValue } from '../errors/shown-value.js';
import type { WorkflowReencryptOptions, WorkflowReencryptResult } from '../storage/payload-reencryption.js';
import { randomUUID } from 'node:crypto';
import { setMaxListeners } from 'node:events';
import { Inject, Injectable, type OnModuleDestroy } from '@nestjs/common';
import { WorkflowAlreadyStartedError } from '../errors/workflow-already-started.error.js';
import { WorkflowInvalidStateError } from '../errors/workflow-invalid-state.error.js';
import { WorkflowNotFoundError } from '../errors/workflow-not-found.error.js';
import { WorkflowEvents } from '../events/workflow-events.js';
import { sameJson, toJsonValue } from '../engine/json-value.js';
import type { WorkflowDefinition, WorkflowReference } from '../engine/workflow-context.js';
import { WorkflowRegistry } from '../registry/workflow-registry.js';
import { WorkflowRuntime } from '../runtime/workflow-runtime.js';
import { signalName, type WorkflowSignal } from '../signals/workflow-signal.js';
import {
  FINISHED_STATUSES,
  UNFINISHED_STATUSES,
  type WorkflowInstance,
  type WorkflowStatus,
} from '../storage/workflow-instance.js';
import { WorkflowStorage } from '../storage/workflow-storage.js';
import type {
  WorkflowInstanceDetails,
  WorkflowPurgeResult,
  WorkflowSignalResult,
  WorkflowUntakenSignal,
} from '../storage/workflow-store.js';
import { parseDuration, parsePositiveDuration, type Duration } from '../time/duration.js';
import { WORKFLOWS_OBSERVER, WORKFLOWS_RESOLVED_OPTIONS } from '../workflows.constants.js';
import type { WorkflowObserver } from '../engine/workflow-observer.js';
import type { ResolvedWorkflowsOptions } from '../workflows-module-options.js';
import { toEpochOption } from './epoch-option.js';
import { waitForEnd } from './instance-end.js';
import { retryInstance } from './retry-reopen.js';
import type { WorkflowHandle } from './workflow-handle.js';
import { invalidInput } from '../errors/workflow-input-error.js';
import { checkOptions } from '../options/known-keys.js';

export interface WorkflowStartOptions {
  /** The instance's id (idempotency key). Default: a random UUID. */
  id?: string;
  /** Default: the class's version, or the newest version of a name. */
  version?: number;
  concurrencyKey?: string;
  rateLimitKey?: string;
  /** Lower is claimed first. Default: the workflow's. */
  priority?: number;
  /** Run deadline from the start; default the workflow's `timeout`. */
  timeout?: Duration;
  /** Don't run before this time. */
  startAt?: Date | number;
  /** The application's transaction (a `pg` client inside BEGIN...): the instance commits with it. */
  transaction?: unknown;
}

export interface WorkflowSignalOptions {
  /** Only waits with exactly this key match. */
  key?: string;
  /** The sender's id: a repeated signal with the same id is stored once. */
  id?: string;
  transaction?: unknown;
}

export interface WorkflowListOptions {
  status?: WorkflowStatus | WorkflowStatus[];
  workflow?: string;
  version?: number;
  parentId?: string;
  scheduleId?: string;
  /** Only ids that start with this (compared literally). */
  idPrefix?: string;
  /** Only instances created at or after this time. */
  createdFrom?: Date | number;
  /** Only instances created before this time. */
  createdBefore?: Date | number;
  /**
   * Keyset paging: start right after this instance in the order (pass the last one of the previous
   * page, or just its `createdAt` and `id`). Deep pages cost what the first does, unlike `offset`.
   */
  after?: { createdAt: number; id: string };
  /** `'asc'` (default): oldest first. `'desc'`: newest first. */
  order?: 'asc' | 'desc';
  /** Default 100, at most 1000. */
  limit?: number;
  /** Default 0. */
  offset?: number;
}

type WorkflowClass<I, O> = abstract new (...args: never[]) => WorkflowDefinition<I, O>;

/** Starts, signals, inspects and manages workflow instances. Inject it anywhere. */
@Injectable()
export class WorkflowClient implements OnModuleDestroy {
  /** Aborted when the module closes: waits still going (`handle.result()`) reject instead of polling on. */
  private readonly closing = new AbortController();

  constructor(
    private readonly storage: WorkflowStorage,
    private readonly registry: WorkflowRegistry,
    private readonly runtime: WorkflowRuntime,
    private readonly events: WorkflowEvents,
    @Inject(WORKFLOWS_RESOLVED_OPTIONS) private readonly options: ResolvedWorkflowsOptions,
    @Inject(WORKFLOWS_OBSERVER) private readonly observer: WorkflowObserver,
  ) {
    // Each waiting result() listens for the close: any number may wait at once without a leak warning.
    setMaxListeners(0, this.closing.signal);
  }

  /** The module is closing: every `handle.result()` still waiting rejects with `WorkflowClientClosedError`. */
  onModuleDestroy(): void {
    this.closing.abort();
  }

  /**
   * Starts an instance. Idempotent by `id`: starting an id that exists returns that instance
   * (whatever its status) when the workflow and input match, and throws
   * `WorkflowAlreadyStartedError` when they don't.
   */
  async start<I, O>(
    workflow: WorkflowClass<I, O> | string,
    input: I,
    options: WorkflowStartOptions = {},
  ): Promise<WorkflowHandle<O>> {
    checkOptions(options, START_OPTIONS, 'start() options');
    const definition = this.registry.resolve(workflow as WorkflowReference, options.version);
    const id = options.id ?? randomUUID();
    if (typeof id !== 'string' || id.trim() === '')
      throw invalidInput(`Invalid instance id ${JSON.stringify(id)}: use a non-empty string.`);
    const json = toJsonValue(input, `The input of workflow "${definition.name}"`, 'input') ?? null;
    const now = this.options.clock.now();
    const startAt = options.startAt === undefined ? now : toEpochOption(options.startAt, 'start', 'startAt');
    const wakeAt = Math.max(startAt, now);
    const timeout =
      options.timeout === undefined
        ? definition.timeout
        : parsePositiveDuration(options.timeout, 'start() option "timeout"');
    const priority = options.priority ?? definition.priority;
    if (!Number.isInteger(priority))
      throw invalidInput(`Invalid start() option "priority": ${shownValue(priority)}. Use a whole number.`);
    for (const field of ['concurrencyKey', 'rateLimitKey'] as const) {
      const value = options[field];
      if (value !== undefined && (typeof value !== 'string' || value === ''))
        throw invalidInput(`Invalid start() option "${field}": use a non-empty string.`);
    }
    const instance = {
      id,
      workflow: definition.name,
      version: definition.version,
      input: json,
      concurrencyKey: options.concurrencyKey ?? null,
      rateLimitKey: options.rateLimitKey ?? null,
      priority,
      deadline: timeout === null ? null : wakeAt + timeout,
      timeout,
      wakeAt,
      now,
      // The caller's trace (through a start span) goes with the instance to every execution.
      traceContext: this.observer.startContext(definition.name, id),
    };
    let result;
    if (options.transaction !== undefined) {
      result = await this.storage.createInTransaction(options.transaction, instance);
    } else {
      // Due now, with a free slot here: created already leased to this process, which runs it at once.
      const lease = wakeAt <= now ? this.runtime.reserveStart(definition.name) : null;
      try {
        result = await this.storage.create(lease ? { ...instance, lease } : instance);
      } catch (error) {
        if (lease) this.runtime.releaseStart();
        throw error;
      }
      if (lease) {
        if (result.created) this.runtime.runStarted(result.instance, lease);
        else this.runtime.releaseStart();
      }
    }
    if (!result.created) {
      const existing = result.instance;
      if (existing.workflow !== definition.name || !sameJson(existing.input, json)) {
        throw new WorkflowAlreadyStartedError(
          `Instance "${id}" already exists as ${existing.workflow}@${existing.version} with ${existing.workflow !== definition.name ? 'another workflow' : 'another input'}. ` +
            'Use another id, or start it with the same workflow and input to get the existing instance.',
          id,
        );
      }
    } else if (wakeAt <= now && result.instance.leaseToken === null && options.transaction === undefined) {
      // In a transaction, the instance is not visible before the commit: the store's wake-up (a
      // NOTIFY on PostgreSQL) goes out with the commit instead.
      this.runtime.kick();
    }
    return this.handle<O>(id);
  }

  /** A handle on an existing instance (no store call until you use it). */
  handle<O = unknown>(id: string): WorkflowHandle<O> {
    return {
      id,
      status: (options) => this.getStatus(id, options),
      result: (options) => this.result<O>(id, options?.timeout),
    };
  }

  /**
   * Sends a signal: stored even when nothing waits yet, and taken by the oldest matching wait of
   * every instance started before it. With `id`, a repeat is stored once (`created: false`).
   * `woken` counts the instances suspended on it right now: `woken: 0` is not an error (a wait
   * reached later still takes it), and it is also what a misspelt name or key gets, so a signal
   * nobody ever takes shows in `untakenSignals()` and on the dashboard's Signals page.
   */
  async signal<T>(
    signal: WorkflowSignal<T> | string,
    payload: T,
    options: WorkflowSignalOptions = {},
  ): Promise<{ id: number; woken: number; created: boolean }> {
    const name = signalName(signal);
    checkOptions(options, SIGNAL_OPTIONS, 'signal() options');
    if (options.key !== undefined && typeof options.key !== 'string')
      throw invalidInput(`Invalid signal() option "key": ${shownValue(options.key)}. Use a string.`);
    if (options.id !== undefined && (typeof options.id !== 'string' || options.id === '')) {
      throw invalidInput(`Invalid signal() option "id": ${shownValue(options.id)}. Use a non-empty string.`);
    }
    const request = {
      name,
      key: options.key ?? null,
      dedupeId: options.id ?? null,
      payload: toJsonValue(payload, `The payload of signal "${name}"`, 'payload') ?? null,
      now: this.options.clock.now(),
    };
    let result: WorkflowSignalResult;
    if (options.transaction !== undefined) {
      result = await this.storage.signalInTransaction(options.transaction, request);
    } else {
      result = await this.storage.signal(request);
    }
    if (result.woken > 0 && options.transaction === undefined) this.runtime.kick();
    return { id: result.id, woken: result.woken, created: result.created };
  }

  /**
   * Up to `limit` (default 50, at most 1000) signals no stored instance took, newest first, by name
   * and key with their time: among the newest 1,000 signals, those no wait took (yet). An old one
   * there often means a name or key no workflow waits for. `null` when the store can't tell
   * (a store without `untakenSignals()`). Reads the store's journal: for an operator, not a loop.
   */
  async untakenSignals(options: { limit?: number } = {}): Promise<WorkflowUntakenSignal[] | null> {
    checkOptions(options, ['limit'], 'untakenSignals() options');
    const limit = options.limit ?? 50;
    if (!Number.isInteger(limit) || limit < 1 || limit > 1000)
      throw invalidInput(
        `Invalid untakenSignals() option "limit": ${shownValue(limit)}. Use a whole number from 1 to 1000.`,
      );
    return this.storage.untakenSignals({ limit });
  }

  /** Cancels: the instance stops at its next step and runs its compensations, then ends `cancelled`. */
  cancel(id: string, reason?: string): Promise<void> {
    return this.requestCancel(id, reason, false);
  }

  /** Terminates: the instance ends `cancelled` at once, without compensations (also while compensating). */
  terminate(id: string, reason?: string): Promise<void> {
    return this.requestCancel(id, reason, true);
  }

  /**
   * Runs a `failed` or `cancelled` instance again from where it stopped (completed steps keep their
   * results; failed steps and steps whose compensations ran run again; a child's end that was not a
   * completion is taken again if the child was retried since, so the parent gets the child's new
   * end), or retries the compensations of a `compensation_failed` one. Of two concurrent retries,
   * one wins. A child's end it has not taken and that `purge()` removed is sent again from a
   * completed child; when it can't be (the child is gone, or did not complete) the retry throws
   * `WorkflowInvalidStateError` and changes nothing, instead of leaving the parent waiting forever;
   * so it does when a `purge()` or `delete()` running meanwhile takes the child away.
   */
  async retry(id: string): Promise<void> {
    await retryInstance(
      this.storage,
      id,
      () => this.getStatus(id, { journal: true }),
      () => this.options.clock.now(),
    );
    this.runtime.kick();
  }

  /**
   * Re-encryption after a key rotation: rewrites every stored payload (instances, their journals,
   * signals, schedules) that is not under the current codec, the first of the `codec` list, in
   * batches. Safe beside running workers (each payload is replaced only while it still holds what
   * was read); resumable (`resumeFrom` a progress's cursor, and payloads already current are never
   * written again). When the result's `remaining` is 0, the older codecs can be removed.
   * The CLI runs the same: `nest-workflows reencrypt`.
   */
  reencrypt(options: WorkflowReencryptOptions = {}): Promise<WorkflowReencryptResult> {
    return this.storage.reencrypt(options, () => this.options.clock.now());
  }

  /** The instance, with its waits and, on request, its journal and children. Throws `WorkflowNotFoundError`. */
  async getStatus(
    id: string,
    options: { journal?: boolean; children?: boolean } = {},
  ): Promise<WorkflowInstanceDetails> {
    const instance = await this.storage.get(id, { journal: options.journal === true, readable: true });
    if (!instance) throw new WorkflowNotFoundError(`No workflow instance has the id "${id}".`);
    const details: WorkflowInstanceDetails = stripLease(instance);
    if (options.children) details.children = await this.allChildren(id);
    return details;
  }

  /** Instances matching the filters, ordered by `createdAt`, then `id`. */
  async list(options: WorkflowListOptions = {}): Promise<WorkflowInstance[]> {
    const limit = options.limit ?? 100;
    const offset = options.offset ?? 0;
    if (!Number.isInteger(limit) || limit < 1 || limit > 1000)
      throw invalidInput(`Invalid list() option "limit": ${shownValue(limit)}. Use a whole number from 1 to 1000.`);
    if (!Number.isInteger(offset) || offset < 0)
      throw invalidInput(`Invalid list() option "offset": ${shownValue(offset)}. Use a whole number, 0 or more.`);
    const status =
      options.status === undefined ? undefined : Array.isArray(options.status) ? options.status : [options.status];
    for (const s of status ?? [])
      if (!KNOWN_STATUSES.includes(s))
        throw invalidInput(
          `Invalid list() option "status": ${JSON.stringify(s)}. Use one of ${KNOWN_STATUSES.join(', ')}.`,
        );
    if (status && status.length === 0)
      throw invalidInput('Invalid list() option "status": the list is empty. Leave it out for every status.');
    if (options.idPrefix !== undefined && (typeof options.idPrefix !== 'string' || options.idPrefix === '')) {
      throw invalidInput(
        `Invalid list() option "idPrefix": ${JSON.stringify(options.idPrefix)}. Use a non-empty string, or leave it out.`,
      );
    }
    if (options.order !== undefined && options.order !== 'asc' && options.order !== 'desc') {
      throw invalidInput(`Invalid list() option "order": ${JSON.stringify(options.order)}. Use 'asc' or 'desc'.`);
    }
    const after = options.after;
    if (after !== undefined && (after === null || typeof after.id !== 'string' || !Number.isFinite(after.createdAt))) {
      throw invalidInput(
        'Invalid list() option "after": pass an instance of the previous page, or { createdAt: epoch ms, id: string }.',
      );
    }
    const rows = await this.storage.list({
      ...options,
      status,
      createdFrom:
        options.createdFrom === undefined ? undefined : toEpochOption(options.createdFrom, 'list', 'createdFrom'),
      createdBefore:
        options.createdBefore === undefined ? undefined : toEpochOption(options.createdBefore, 'list', 'createdBefore'),
      after: after === undefined ? undefined : { createdAt: after.createdAt, id: after.id },
      limit,
      offset,
    });
    return rows.map(stripLease);
  }

  /**
   * Deletes a finished instance and its journal. Throws for an unknown or unfinished one, and for a
   * child whose parent is unfinished: the parent may not have taken the child's end yet, and that
   * end is kept (from `purge()`) only through the child.
   */
  async delete(id: string): Promise<void> {
    for (let attempt = 1; ; attempt++) {
      if (await this.storage.delete(id, FINISHED_STATUSES)) return;
      // The store refused in one statement; read why. A parent that ended since makes the child deletable.
      const current = await this.getStatus(id);
      if (UNFINISHED_STATUSES.includes(current.status)) {
        throw new WorkflowInvalidStateError(
          `Instance "${id}" is ${current.status}: only finished instances can be deleted. Cancel or terminate it first.`,
        );
      }
      const parent = current.parentId === null ? null : await this.storage.get(current.parentId, { readable: true });
      if (parent !== null && UNFINISHED_STATUSES.includes(parent.status)) {
        throw new WorkflowInvalidStateError(
          `Instance "${id}" is a child of instance "${parent.id}", which is ${parent.status}: the parent may still wait for this child's end, ` +
            'which would be lost with the child. Let the parent end first (or cancel or terminate it), then delete the child.',
        );
      }
      if (attempt === 3)
        throw new WorkflowInvalidStateError(
          `Instance "${id}" changed while it was being deleted. Read its status and try again.`,
        );
    }
  }

  /**
   * Deletes finished instances that ended before `olderThan` (a date, or a duration back from now)
   * and signals sent before it. `limit` bounds each kind; without it, it deletes in batches until
   * nothing is left. Unfinished instances are never deleted.
   */
  async purge(options: {
    olderThan: Duration | Date;
    statuses?: WorkflowStatus[];
    limit?: number;
  }): Promise<WorkflowPurgeResult> {
    const now = this.options.clock.now();
    const cutoff =
      options.olderThan instanceof Date
        ? options.olderThan.getTime()
        : now - parseDuration(options.olderThan, 'purge() option "olderThan"');
    if (!Number.isFinite(cutoff))
      throw invalidInput('Invalid purge() option "olderThan": use a valid Date or a duration such as \'30d\'.');
    // Nothing ended after now, but an open rate window ends later: a cutoff past now would delete it.
    const before = Math.min(cutoff, now + 1);
    if (options.statuses !== undefined && !Array.isArray(options.statuses)) {
      throw invalidInput(
        `Invalid purge() option "statuses": ${JSON.stringify(options.statuses)}. Use an array of statuses, or leave it out for every finished one.`,
      );
    }
    // A misspelt status would otherwise purge nothing, silently (unfinished ones are only skipped).
    for (const s of options.statuses ?? [])
      if (!KNOWN_STATUSES.includes(s))
        throw invalidInput(
          `Invalid purge() option "statuses": ${JSON.stringify(s)}. Use ${FINISHED_STATUSES.join(', ')}.`,
        );
    const statuses = (options.statuses ?? [...FINISHED_STATUSES]).filter((s) => FINISHED_STATUSES.includes(s));
    const total: WorkflowPurgeResult = { instances: 0, signals: 0, rateLimits: 0 };
    if (statuses.length === 0) return total;
    if (options.limit !== undefined && (!Number.isInteger(options.limit) || options.limit < 1)) {
      throw invalidInput(
        `Invalid purge() option "limit": ${shownValue(options.limit)}. Use a whole number, 1 or more.`,
      );
    }
    const batch = options.limit ?? PURGE_BATCH;
    for (;;) {
      const done = await this.storage.purge({ statuses, before, limit: batch });
      total.instances += done.instances;
      total.signals += done.signals;
      total.rateLimits += done.rateLimits;
      // Until a batch finds nothing: one that skipped rows another transaction holds (PostgreSQL's
      // SKIP LOCKED) deletes fewer than it asked for while more remain.
      if (options.limit !== undefined || done.instances + done.signals + done.rateLimits === 0) return total;
    }
  }

  private async requestCancel(id: string, reason: string | undefined, terminate: boolean): Promise<void> {
    if (reason !== undefined && typeof reason !== 'string')
      throw invalidInput(`Invalid reason: ${shownValue(reason)}. Use a string.`);
    const accepted = await this.storage.requestCancel(id, {
      reason: reason ?? null,
      now: this.options.clock.now(),
      terminate,
    });
    if (accepted) {
      this.runtime.noticeCancel(id, terminate);
      return;
    }
    const current = await this.getStatus(id);
    const what = terminate ? 'terminated' : 'cancelled';
    if (FINISHED_STATUSES.includes(current.status))
      throw new WorkflowInvalidStateError(`Instance "${id}" is ${current.status} and can't be ${what}.`);
    if (current.terminateRequested || (!terminate && current.cancelRequested)) {
      throw new WorkflowInvalidStateError(
        `Instance "${id}" was already asked to ${terminate ? 'terminate' : 'cancel'}.`,
      );
    }
    throw new WorkflowInvalidStateError(
      `Instance "${id}" is ${current.status} and can't be ${what}` +
        (current.status === 'compensating' && !terminate
          ? ': it is already compensating; terminate it to stop its compensations.'
          : '.'),
    );
  }

  private result<O>(id: string, timeout: Duration | undefined): Promise<O> {
    const limit = timeout === undefined ? null : parseDuration(timeout, 'result() option "timeout"');
    return waitForEnd<O>(
      {
        read: (instanceId) => this.getStatus(instanceId),
        events: this.events,
        listenForEnds: (listener, instanceId) => this.storage.listenForEnds(listener, instanceId),
        requestEndNotice: (instanceId) => this.storage.requestEndNotice(instanceId, this.options.clock.now()),
        whileRunningHere: (instanceId) => this.runtime.whileRunningHere(instanceId),
        closing: this.closing.signal,
        pollInterval: this.options.worker.pollInterval,
      },
      id,
      limit,
    );
  }

  private async allChildren(id: string): Promise<WorkflowInstance[]> {
    const children: WorkflowInstance[] = [];
    for (let offset = 0; ; offset += 1000) {
      const page = await this.storage.list({ parentId: id, limit: 1000, offset });
      children.push(...page.map(stripLease));
      if (page.length < 1000) return children;
    }
  }
}

const PURGE_BATCH = 1000;
const KNOWN_STATUSES = [...UNFINISHED_STATUSES, ...FINISHED_STATUSES];
const START_OPTIONS = [
  'id',
  'version',
  'concurrencyKey',
  'rateLimitKey',
  'priority',
  'timeout',
  'startAt',
  'transaction',
];
const SIGNAL_OPTIONS = ['key', 'id', 'transaction'];

/** Instances as the client shows them: the lease token is the workers' secret. */
function stripLease<T extends WorkflowInstance>(instance: T): T {
  return { ...instance, leaseToken: null };
}
