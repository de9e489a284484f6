import { shownValue } from '../errors/shown-value.js';
import type { WorkflowOptions } from '../decorators/workflow-options.js';
import { getWorkflowMetadata } from '../decorators/workflow.decorator.js';
import { UnknownWorkflowError } from '../errors/unknown-workflow.error.js';
import type { ResolvedChildWorkflow } from '../engine/child-support.js';
import type { EngineRegistry, RunnableWorkflow } from '../engine/workflow-engine.js';
import type { WorkflowDefinition, WorkflowReference } from '../engine/workflow-context.js';
import { resolveRetry, type RetryPolicy } from '../engine/retry-policy.js';
import type { WorkflowConcurrencyLimit, WorkflowRateLimitRule } from '../storage/workflow-store.js';
import { checkKnownKeys } from '../options/known-keys.js';
import { resolveDeclaredSchedules, type DeclaredSchedule } from '../scheduler/declared-schedule.js';
import { parseDuration, parsePositiveDuration } from '../time/duration.js';

/** A class, as Nest's discovery hands it over. */
export type WorkflowClassLike = abstract new (...args: never[]) => unknown;

/** A validated `@Workflow` class of this application. */
export interface RegisteredWorkflow extends RunnableWorkflow {
  metatype: WorkflowClassLike;
  /** Run timeout in ms, or `null`. */
  timeout: number | null;
  priority: number;
  concurrency: { limit: number | null; perKey: number | null } | null;
  rateLimit: WorkflowRateLimitRule | null;
  /** Its declared schedules, validated. */
  schedules: DeclaredSchedule[];
}

/**
 * The workflows this application declares, validated and indexed by name and version. Errors
 * name the class and the option, so a bad definition fails startup, not the first instance.
 */
export class WorkflowRegistry implements EngineRegistry {
  private readonly byKey = new Map<string, RegisteredWorkflow>();
  private readonly byClass = new Map<WorkflowClassLike, RegisteredWorkflow>();
  private readonly newest = new Map<string, RegisteredWorkflow>();
  private versionList: Array<{ name: string; version: number }> = [];
  private limitList: WorkflowConcurrencyLimit[] = [];
  private rateList: WorkflowRateLimitRule[] = [];
  private limited = new Set<string>();
  private collected = false;

  constructor(private readonly defaultRetry: RetryPolicy) {}

  /**
   * Marks the application's `@Workflow` providers as collected (the explorer calls it in
   * `onModuleInit`). Until then a workflow that can't be found is reported as "not initialized",
   * since the likely cause is a missing `app.init()`, not a missing provider.
   */
  markCollected(): void {
    this.collected = true;
  }

  /** Whether the application's `@Workflow` providers have been collected (its `init()` ran). */
  get isCollected(): boolean {
    return this.collected;
  }

  /** Adds a decorated class with its provider instance. */
  register(metatype: WorkflowClassLike, instance: unknown): RegisteredWorkflow {
    const meta = getWorkflowMetadata(metatype);
    if (!meta) throw new TypeError(`${metatype.name} is not decorated with @Workflow().`);
    const where = `@Workflow('${meta.name}') on ${metatype.name}`;
    if (typeof (instance as WorkflowDefinition | undefined)?.run !== 'function') {
      throw new TypeError(`${where} has no run(ctx, input) method. Implement WorkflowDefinition.`);
    }
    const workflow = validate(
      meta.name,
      meta.options,
      where,
      metatype,
      instance as WorkflowDefinition<unknown, unknown>,
      this.defaultRetry,
    );
    const key = `${workflow.name}@${workflow.version}`;
    const existing = this.byKey.get(key);
    if (existing) {
      if (existing.metatype === metatype) return existing;
      throw new TypeError(
        `${where} and ${existing.metatype.name} both declare workflow "${workflow.name}" version ${workflow.version}. ` +
          'Give the newer class a higher version, or remove one of them.',
      );
    }
    this.byKey.set(key, workflow);
    this.byClass.set(metatype, workflow);
    const newest = this.newest.get(workflow.name);
    if (!newest || newest.version < workflow.version) this.newest.set(workflow.name, workflow);
    this.reindex();
    return workflow;
  }

  get(name: string, version: number): RegisteredWorkflow | undefined {
    return this.byKey.get(`${name}@${version}`);
  }

  all(): RegisteredWorkflow[] {
    return [...this.byKey.values()];
  }

  /** The newest declaration of each workflow name (the one schedules start, and whose schedules count). */
  latest(): RegisteredWorkflow[] {
    return [...this.newest.values()];
  }

  versions(): Array<{ name: string; version: number }> {
    return this.versionList;
  }

  limits(): WorkflowConcurrencyLimit[] {
    return this.limitList;
  }

  rateLimits(): WorkflowRateLimitRule[] {
    return this.rateList;
  }

  /** Whether the workflow has a concurrency or rate limit (only claims may then lease its instances). */
  isLimited(name: string): boolean {
    return this.limited.has(name);
  }

  /**
   * The workflow a class or name refers to: a class at its own version, a name at `version` or
   * the newest this application declares. Throws `UnknownWorkflowError` saying what is known.
   */
  resolve(workflow: WorkflowReference, version?: number): RegisteredWorkflow {
    if (typeof workflow === 'function') {
      const found = this.byClass.get(workflow);
      if (!found) {
        const meta = getWorkflowMetadata(workflow);
        if (meta && !this.collected)
          throw new UnknownWorkflowError(`${workflow.name} (@Workflow('${meta.name}')) ${notInitialized}`);
        throw new UnknownWorkflowError(
          meta
            ? `${workflow.name} (@Workflow('${meta.name}')) is not a provider of this application. Add it to a module's providers.`
            : `${workflow.name} is not decorated with @Workflow(). Decorate it and add it to a module's providers.`,
        );
      }
      if (version !== undefined && version !== found.version) return this.resolve(found.name, version);
      return found;
    }
    if (typeof workflow !== 'string' || workflow === '') {
      throw new UnknownWorkflowError(
        `Invalid workflow ${JSON.stringify(workflow)}: pass a @Workflow class or its name.`,
      );
    }
    const found = version === undefined ? this.newest.get(workflow) : this.byKey.get(`${workflow}@${version}`);
    if (!found) {
      if (!this.collected) throw new UnknownWorkflowError(`Workflow "${workflow}" ${notInitialized}`);
      const known = this.all().map((w) => `${w.name}@${w.version}`);
      throw new UnknownWorkflowError(
        `No workflow "${workflow}"${version === undefined ? '' : ` version ${version}`} is declared in this application` +
          (known.length
            ? ` (known: ${known.join(', ')}).`
            : " (none is: add @Workflow classes to a module's providers)."),
      );
    }
    return found;
  }

  resolveChild(workflow: WorkflowReference, version?: number): ResolvedChildWorkflow {
    const found = this.resolve(workflow, version);
    return { name: found.name, version: found.version, timeout: found.timeout, priority: found.priority };
  }

  private reindex(): void {
    const all = this.all();
    this.versionList = all.map(({ name, version }) => ({ name, version }));
    const limits = new Map<string, WorkflowConcurrencyLimit>();
    const rates = new Map<string, WorkflowRateLimitRule>();
    // Limits count every version of a name: the newest declaration's settings apply.
    for (const workflow of this.newest.values()) {
      if (workflow.concurrency) limits.set(workflow.name, { workflow: workflow.name, ...workflow.concurrency });
      if (workflow.rateLimit) rates.set(workflow.name, workflow.rateLimit);
    }
    this.limitList = [...limits.values()];
    this.rateList = [...rates.values()];
    this.limited = new Set([...limits.keys(), ...rates.keys()]);
  }
}

/** What a workflow looked up before the application's `init()` is told (the registry is empty then). */
const notInitialized =
  "is not registered yet: the application has not been initialized. Call `await app.init()` (a testing module's " +
  '`init()`; `app.listen()` calls it) before start() or drain(): the @Workflow providers are collected then.';

/** The message of `drain()` before the application's `init()`, when it would find nothing to run. */
export const DRAIN_BEFORE_INIT =
  'drain() was called but the application has not been initialized, so no workflow is registered and nothing would run. ' +
  "Call `await app.init()` (a testing module's `init()`) first: the @Workflow providers are collected then.";

const WORKFLOW_OPTIONS = ['version', 'timeout', 'retry', 'concurrency', 'rateLimit', 'priority', 'schedules'];

function validate(
  name: string,
  options: WorkflowOptions,
  where: string,
  metatype: WorkflowClassLike,
  instance: WorkflowDefinition<unknown, unknown>,
  defaultRetry: RetryPolicy,
): RegisteredWorkflow {
  checkKnownKeys(options, WORKFLOW_OPTIONS, `${where} options`);
  const version = options.version ?? 1;
  if (!Number.isInteger(version) || version < 1)
    throw new TypeError(`${where}: invalid version ${shownValue(version)}. Use a whole number, 1 or more.`);
  const priority = options.priority ?? 0;
  // The stores keep a priority as a 32-bit integer: past that, every start() would be refused.
  if (!Number.isInteger(priority) || Math.abs(priority) > 2_147_483_647) {
    throw new TypeError(
      `${where}: invalid priority ${shownValue(priority)}. Use a whole number from -2147483647 to 2147483647 (lower runs first).`,
    );
  }
  const timeout = options.timeout === undefined ? null : parsePositiveDuration(options.timeout, `timeout of ${where}`);
  const retry = resolveRetry(options.retry, `retry of ${where}`, defaultRetry);
  let concurrency: RegisteredWorkflow['concurrency'] = null;
  if (options.concurrency !== undefined && (options.concurrency === null || typeof options.concurrency !== 'object')) {
    throw new TypeError(
      `${where}: invalid concurrency ${shownValue(options.concurrency)}. Use { limit?, perKey? }, such as { limit: ${String(options.concurrency)} }.`,
    );
  }
  if (options.concurrency) {
    checkKnownKeys(options.concurrency, ['limit', 'perKey'], `${where}: concurrency`);
    const { limit, perKey } = options.concurrency;
    for (const [field, value] of Object.entries({ limit, perKey })) {
      if (value !== undefined && (!Number.isInteger(value) || value! < 1)) {
        throw new TypeError(
          `${where}: invalid concurrency.${field} ${shownValue(value)}. Use a whole number, 1 or more.`,
        );
      }
    }
    concurrency = { limit: limit ?? null, perKey: perKey ?? null };
  }
  let rateLimit: WorkflowRateLimitRule | null = null;
  if (options.rateLimit !== undefined && (options.rateLimit === null || typeof options.rateLimit !== 'object')) {
    throw new TypeError(
      `${where}: invalid rateLimit ${shownValue(options.rateLimit)}. Use { limit?: { max, duration }, perKey?: { max, duration } }.`,
    );
  }
  if (options.rateLimit) {
    checkKnownKeys(options.rateLimit, ['limit', 'perKey'], `${where}: rateLimit`);
    const window = (field: 'limit' | 'perKey') => {
      const value = options.rateLimit![field];
      if (value === undefined) return null;
      checkKnownKeys(value, ['max', 'duration'], `${where}: rateLimit.${field}`);
      if (!Number.isInteger(value.max) || value.max < 1) {
        throw new TypeError(
          `${where}: invalid rateLimit.${field}.max ${shownValue(value.max)}. Use a whole number, 1 or more.`,
        );
      }
      const duration = parseDuration(value.duration, `rateLimit.${field}.duration of ${where}`);
      if (duration <= 0) throw new TypeError(`${where}: rateLimit.${field}.duration must be longer than 0.`);
      return { max: value.max, duration };
    };
    rateLimit = { workflow: name, limit: window('limit'), perKey: window('perKey') };
  }
  const schedules = resolveDeclaredSchedules(name, options.schedules, where);
  return { name, version, instance, metatype, retry, timeout, priority, concurrency, rateLimit, schedules };
}
