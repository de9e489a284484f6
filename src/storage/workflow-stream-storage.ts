import { WorkflowStreamClosedError } from '../errors/workflow-stream-closed.error.js';
import { WorkflowStreamLimitError } from '../errors/workflow-stream-limit.error.js';
import type { PayloadEncoding } from './payload-encoding.js';
import { DEFAULT_STREAM_LIMITS, MAX_STREAM_NAME, type WorkflowStreamLimitOptions } from './stream-limits.js';
import type { WorkflowStore } from './workflow-store.js';
import {
  streamValueText,
  type NewWorkflowStreamItem,
  type WorkflowStreamPage,
  type WorkflowStreamQuery,
} from './workflow-store-streams.js';

/** One append as the engine asks for it (`WorkflowStreamStorage.append()`). */
export interface StreamAppendRequest {
  id: string;
  stream: string;
  items: NewWorkflowStreamItem[];
  close: boolean;
  now: number;
}

/**
 * Throws a `TypeError` unless `name` can name a stream: a non-empty string of at most 255
 * characters without a line break (PostgreSQL's notifications separate the id and the name by one).
 */
export function checkStreamName(name: unknown): asserts name is string {
  if (typeof name !== 'string' || name === '' || name.length > MAX_STREAM_NAME || /[\r\n]/.test(name)) {
    throw new TypeError(
      `Invalid stream name ${typeof name === 'string' ? JSON.stringify(name.slice(0, 80)) : String(name)}: ` +
        `use a non-empty string of at most ${MAX_STREAM_NAME} characters, without line breaks.`,
    );
  }
}

/**
 * The streams' part of the storage layer, `WorkflowStorage.streams`: values pass the codecs here
 * (encoded on the way in, decoded on the way out) as every other payload does, and the limits are
 * checked here (a value's size before the store is asked, the stream's totals by the store under
 * its lock), so every store refuses alike and with the same errors.
 */
export class WorkflowStreamStorage {
  readonly limits: Readonly<WorkflowStreamLimitOptions>;

  constructor(
    private readonly store: WorkflowStore,
    private readonly encoding: PayloadEncoding | null,
    limits: Partial<WorkflowStreamLimitOptions> = {},
  ) {
    this.limits = { ...DEFAULT_STREAM_LIMITS, ...limits };
  }

  /** `null` when the store has streams; else its name, for the error. */
  unsupported(): string | null {
    return this.store.appendStream && this.store.readStream ? null : this.store.constructor.name;
  }

  /**
   * In: the values (checked against `maxValueBytes`, then encoded). Resolves to each item's seq;
   * throws `WorkflowStreamClosedError` or `WorkflowStreamLimitError` when the store refused (nothing
   * stored), and `null` when the instance is gone.
   */
  async append(request: StreamAppendRequest): Promise<number[] | null> {
    const { store } = this;
    if (!store.appendStream) throw this.noStreams();
    const items: NewWorkflowStreamItem[] = [];
    for (const item of request.items) {
      if (item.kind === 'value') {
        const { bytes } = streamValueText(item.value);
        if (bytes > this.limits.maxValueBytes) {
          throw new WorkflowStreamLimitError(
            `A value written to stream "${request.stream}" of instance "${request.id}" is ${bytes} bytes of JSON, over the ` +
              `limit of ${this.limits.maxValueBytes} bytes per value; nothing was stored. Write smaller pieces (a chunk of text per value), ` +
              'or keep large data elsewhere and write a reference to it.',
          );
        }
      }
      items.push(
        item.kind === 'value' && this.encoding
          ? { ...item, value: await this.encoding.chain.encode(item.value) }
          : item,
      );
    }
    const result = await store.appendStream({ ...request, items, limits: this.limits });
    if (!result) return null;
    if (result.refused === 'closed') {
      throw new WorkflowStreamClosedError(
        `Stream "${request.stream}" of instance "${request.id}" is closed, so the value was not stored. Write every value before close().`,
      );
    }
    if (result.refused) {
      const limit =
        result.refused === 'values' ? `${this.limits.maxValues} values` : `${this.limits.maxBytes} bytes of values`;
      throw new WorkflowStreamLimitError(
        `Stream "${request.stream}" of instance "${request.id}" would hold more than ${limit}, its limit; nothing of the write was stored. ` +
          'Write fewer, larger values, or split the output over several streams.',
      );
    }
    return result.seqs;
  }

  /** Out: one page, its values decoded. */
  async read(query: WorkflowStreamQuery): Promise<WorkflowStreamPage> {
    const { store } = this;
    if (!store.readStream) throw this.noStreams();
    const page = await store.readStream(query);
    const { encoding } = this;
    if (!encoding) return page;
    for (const item of page.items) if (item.kind === 'value') item.value = await encoding.chain.decode(item.value);
    return page;
  }

  /** The store's notifications of appends, or `null` when it has none (readers poll). */
  async listen(listener: (id?: string, stream?: string) => void): Promise<(() => Promise<void>) | null> {
    return this.store.listenForStreams ? this.store.listenForStreams(listener) : null;
  }

  private noStreams(): TypeError {
    return new TypeError(
      `${this.store.constructor.name} has no streams (appendStream, readStream): use a store that has them ` +
        '(every store this package ships does), or implement them (the contract suite checks them).',
    );
  }
}
