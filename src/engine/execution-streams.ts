import { isWorkflowInterrupt } from '../errors/workflow-interrupt.js';
import type { StreamAppendRequest, WorkflowStreamStorage } from '../storage/workflow-stream-storage.js';
import { checkStreamName } from '../storage/workflow-stream-storage.js';
import type { NewWorkflowStreamItem } from '../storage/workflow-store-streams.js';
import { toJsonValue } from './json-value.js';
import type { WorkflowStream } from './workflow-context.js';

/** What the streams need of their execution (its `ExecutionState` and `OperationControl`, written out: execution-host.ts names this class). */
interface StreamHost {
  readonly instance: { readonly id: string };
  now(): number;
  operationStarted(): void;
  operationSettled(): void;
}

/**
 * The streams of one execution: `ctx.stream()` (the body's writes, numbered per stream in call
 * order, so a replay's writes are recognised and stored once) and a step's `run.stream()` (live, at
 * least once, each value tagged with its step and attempt). When an attempt that wrote fails, each
 * stream it wrote to gets a `discard` item naming it, so readers can void what it wrote.
 */
export class ExecutionStreams {
  /** The body's writes so far, per stream: the next write's body index. */
  private readonly bodyWrites = new Map<string, number>();
  /** The streams each running step attempt wrote to, by `step\0attempt`. */
  private readonly attemptStreams = new Map<string, Set<string>>();

  constructor(
    private readonly host: StreamHost,
    private readonly storage: WorkflowStreamStorage,
    /** A store failure of a body write: stops the execution (it is not the workflow's). */
    private readonly storeFailed: (error: unknown) => never,
  ) {}

  /** `ctx.stream(name)`. */
  body<T>(name: string): WorkflowStream<T> {
    checkStreamName(name);
    this.checkSupported();
    return {
      name,
      write: (value) => {
        const index = this.bodyWrites.get(name) ?? 0;
        this.bodyWrites.set(name, index + 1);
        return this.bodyAppend(name, [this.item(name, value, index, null, null)], false);
      },
      close: () => this.bodyAppend(name, [], true),
    };
  }

  /** `run.stream(name)` in attempt `attempt` of step `step`. */
  step<T>(step: string, attempt: number, name: string): WorkflowStream<T> {
    checkStreamName(name);
    this.checkSupported();
    const key = `${step}\0${attempt}`;
    return {
      name,
      write: async (value) => {
        const item = this.item(name, value, null, step, attempt);
        let streams = this.attemptStreams.get(key);
        if (!streams) this.attemptStreams.set(key, (streams = new Set()));
        streams.add(name);
        await this.append({
          id: this.host.instance.id,
          stream: name,
          items: [item],
          close: false,
          now: this.host.now(),
        });
      },
      close: async () => {
        await this.append({ id: this.host.instance.id, stream: name, items: [], close: true, now: this.host.now() });
      },
    };
  }

  /** The attempt ended: forget what it wrote (it succeeded), or mark it void (it failed). */
  async attemptEnded(step: string, attempt: number, failed: boolean): Promise<void> {
    const key = `${step}\0${attempt}`;
    const streams = this.attemptStreams.get(key);
    if (!streams) return;
    this.attemptStreams.delete(key);
    if (!failed) return;
    const discard: NewWorkflowStreamItem = { kind: 'discard', value: null, bodyIndex: null, step, attempt };
    for (const stream of streams) {
      // A closed stream or a store failure: the readers keep the values (at least once, as documented).
      await this.append({
        id: this.host.instance.id,
        stream,
        items: [discard],
        close: false,
        now: this.host.now(),
      }).catch(() => undefined);
    }
  }

  private item(
    name: string,
    value: unknown,
    bodyIndex: number | null,
    step: string | null,
    attempt: number | null,
  ): NewWorkflowStreamItem {
    const json = toJsonValue(value, `A value written to stream "${name}"`, 'value') ?? null;
    return { kind: 'value', value: json, bodyIndex, step, attempt };
  }

  /** A body write: the execution neither suspends nor ends while it is in flight. */
  private async bodyAppend(stream: string, items: NewWorkflowStreamItem[], close: boolean): Promise<void> {
    this.host.operationStarted();
    try {
      await this.storage
        .append({ id: this.host.instance.id, stream, items, close, now: this.host.now() })
        .catch((error: unknown) => {
          if (isWorkflowInterrupt(error) || isStreamRefusal(error)) throw error;
          return this.storeFailed(error);
        });
    } finally {
      this.host.operationSettled();
    }
  }

  private async append(request: StreamAppendRequest): Promise<void> {
    await this.storage.append(request);
  }

  private checkSupported(): void {
    const store = this.storage.unsupported();
    if (store !== null) {
      throw new TypeError(
        `ctx.stream() needs a store with streams, and ${store} has none. Use a store this package ships.`,
      );
    }
  }
}

/** The refusals a workflow sees (a closed stream, a limit, a value JSON can't carry), not store failures. */
function isStreamRefusal(error: unknown): boolean {
  return (
    error instanceof TypeError ||
    (error instanceof Error &&
      (error.name === 'WorkflowStreamClosedError' || error.name === 'WorkflowStreamLimitError'))
  );
}
