import { WorkflowAlreadyStartedError } from '../errors/workflow-already-started.error.js';
import { WorkflowChildFailedError } from '../errors/workflow-child-failed.error.js';
import type { SerializedWorkflowError } from '../errors/serialized-workflow-error.js';
import { FINISHED_STATUSES, type WorkflowParentClose, type WorkflowStatus } from '../storage/workflow-instance.js';
import type { WorkflowStorage } from '../storage/workflow-storage.js';
import type { WorkflowClock } from '../time/workflow-clock.js';
import type { NewWorkflowInstance } from '../storage/workflow-store.js';
import { checkOptions } from '../options/known-keys.js';
import { parsePositiveDuration } from '../time/duration.js';
import { sameJson, toJsonValue } from './json-value.js';
import type { WorkflowChildHandle, WorkflowChildOptions, WorkflowReference } from './workflow-context.js';
import type { OperationHost } from './execution-host.js';

export { CHILD_ENDED_SIGNAL } from '../storage/workflow-store-signals.js';

/** The payload of `CHILD_ENDED_SIGNAL`. */
export interface ChildEnded {
  status: WorkflowStatus;
  output: unknown;
  error: SerializedWorkflowError | null;
}

/** A workflow as children start it. */
export interface ResolvedChildWorkflow {
  name: string;
  version: number;
  /** Its run timeout in ms, or `null`. */
  timeout: number | null;
  priority: number;
}

export interface ChildDeps {
  /** The workflow a reference names, at `version` or the newest this process has. */
  resolveChild(workflow: WorkflowReference, version?: number): ResolvedChildWorkflow;
  /** Creates the child, or finds it (the same workflow, input and parent) after a crash. */
  createChild(child: NewWorkflowInstance): Promise<void>;
}

const SETTLED = Promise.resolve();

const PARENT_CLOSE: readonly WorkflowParentClose[] = ['cancel', 'terminate', 'abandon'];

/** What `ctx.startChild()` and `ctx.executeChild()` take in their options (`WorkflowChildOptions`). */
const CHILD_OPTIONS = ['id', 'version', 'parentClose', 'concurrencyKey', 'rateLimitKey', 'priority', 'timeout'];

/** `ctx.startChild()` and child handles, for one execution. */
export class ChildSupport {
  /** Made at the first child (most executions start none). */
  private results: Map<string, Promise<unknown>> | null = null;
  /** Child creations this execution asked the store for and that have not settled. */
  private creating: Set<Promise<void>> | null = null;
  /**
   * Whether this execution reached a child's start: a child may exist that the journal doesn't name
   * yet, created by this execution or by an earlier one cut short (a crash, a lost lease, a store
   * failure) between the child's creation and the write that journals it.
   */
  attempted = false;

  constructor(
    private readonly host: OperationHost,
    private readonly deps: ChildDeps,
    /** Waits, under journal name `name`, for the `CHILD_ENDED_SIGNAL` keyed by the child's id. */
    private readonly waitForEnd: (name: string, childId: string) => Promise<ChildEnded>,
  ) {}

  async start<I, O>(
    name: string,
    workflow: WorkflowReference,
    input: I,
    options: WorkflowChildOptions = {},
  ): Promise<WorkflowChildHandle<O>> {
    const { host } = this;
    checkOptions(options, CHILD_OPTIONS, `options of child "${name}"`);
    // Set before anything can stop this execution (a cancel seen by enter(), replay-only mode): its
    // end must then look for the child, which an execution cut short may have left unjournaled.
    this.attempted = true;
    host.admitOperation(name, 'child');
    const entry = host.journalEntry(name);
    if (entry?.state === 'completed') return this.handle<O>(name, entry.childId!);
    if (host.replayOnly) return host.suspendOperation({ wakeAt: null, wait: null });
    const parentClose = options.parentClose ?? 'cancel';
    if (!PARENT_CLOSE.includes(parentClose)) {
      throw new TypeError(
        `Invalid parentClose for child "${name}": ${JSON.stringify(parentClose)}. Use 'cancel', 'terminate' or 'abandon'.`,
      );
    }
    const resolved = this.deps.resolveChild(workflow, options.version);
    const id = options.id ?? `${host.instance.id}/${name}`;
    const timeout =
      options.timeout === undefined
        ? resolved.timeout
        : parsePositiveDuration(options.timeout, `timeout of child "${name}"`);
    const json = toJsonValue(input, `The input of child "${name}"`, 'input') ?? null;
    host.ensureJournalRoom(name);
    host.operationStarted();
    try {
      await host.flush();
      host.throwIfStopped();
      const now = host.now();
      const creation = host.observe.around('child', name, 1, () =>
        this.deps.createChild({
          id,
          workflow: resolved.name,
          version: resolved.version,
          input: json,
          parentId: host.instance.id,
          parentClose,
          concurrencyKey: options.concurrencyKey ?? null,
          rateLimitKey: options.rateLimitKey ?? null,
          priority: options.priority ?? resolved.priority,
          deadline: timeout === null ? null : now + timeout,
          timeout,
          now,
        }),
      );
      const creating = (this.creating ??= new Set());
      creating.add(creation);
      try {
        await creation;
      } finally {
        creating.delete(creation);
      }
    } finally {
      host.operationSettled();
    }
    const at = host.now();
    host.record({ name, kind: 'child', state: 'completed', childId: id, createdAt: at, updatedAt: at });
    host.throwIfStopped();
    return this.handle<O>(name, id);
  }

  /**
   * Resolves once no child creation is in flight. An execution ended at once (terminate) closes
   * its children after this, so a child whose creation was under way is closed too.
   */
  settled(): Promise<void> {
    // Most executions start no child: nothing to wait for, and no promise of their own to make.
    if (this.creating === null || this.creating.size === 0) return SETTLED;
    return Promise.allSettled([...this.creating]).then(() => undefined);
  }

  private handle<O>(name: string, id: string): WorkflowChildHandle<O> {
    return {
      id,
      result: () => {
        const results = (this.results ??= new Map());
        let result = results.get(name);
        if (!result) {
          result = this.waitForEnd(`$child:${name}`, id).then((ended) => {
            if (ended.status === 'completed') return ended.output;
            const error = ended.error;
            throw new WorkflowChildFailedError(
              `Child "${id}" (started as "${name}") ended as ${ended.status}${error ? `: ${error.name}: ${error.message}` : ''}.`,
              id,
              error,
            );
          });
          results.set(name, result);
        }
        return result as Promise<O>;
      },
    };
  }
}

const CHILDREN_PAGE = 500;

/**
 * Applies `parentClose` to the unfinished children of `parentId` (cancel or terminate them, `reason`
 * saying why), telling `accepted` of each request the store took. At least once: a repeated request
 * changes nothing, so a crash in between closes them again on the parent's next execution.
 */
export async function closeChildren(
  { storage, clock }: { storage: WorkflowStorage; clock: WorkflowClock },
  parentId: string,
  reason: string,
  accepted: (id: string, terminate: boolean) => void,
): Promise<void> {
  for (let offset = 0; ; offset += CHILDREN_PAGE) {
    const children = await storage.list({ parentId, limit: CHILDREN_PAGE, offset });
    for (const child of children) {
      // A paused child (read as `paused`) is unfinished too: its parent's close reaches it.
      if (FINISHED_STATUSES.includes(child.status) || child.parentClose === null || child.parentClose === 'abandon')
        continue;
      const terminate = child.parentClose === 'terminate';
      const text = `${terminate ? 'Terminated' : 'Cancelled'}: ${reason}.`;
      if (await storage.requestCancel(child.id, { reason: text, now: clock.now(), terminate }))
        accepted(child.id, terminate);
    }
    if (children.length < CHILDREN_PAGE) return;
  }
}

/** Creates a child, or accepts the one a crashed execution created (same workflow, input and parent). */
export async function createChild(
  deps: { storage: WorkflowStorage; kick(): void },
  child: NewWorkflowInstance,
): Promise<void> {
  const { instance, created } = await deps.storage.create(child);
  if (created) {
    deps.kick();
    return;
  }
  if (
    instance.workflow !== child.workflow ||
    instance.parentId !== child.parentId ||
    !sameJson(instance.input, child.input)
  ) {
    throw new WorkflowAlreadyStartedError(
      `Child id "${child.id}" is taken by another instance (${instance.workflow}, parent ${instance.parentId ?? 'none'}). ` +
        'Give the child an id of its own with startChild(name, workflow, input, { id }).',
      child.id,
    );
  }
}
