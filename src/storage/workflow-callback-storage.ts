import { createHash } from 'node:crypto';
import type { PayloadEncoding } from './payload-encoding.js';
import type { WorkflowStore } from './workflow-store.js';
import type {
  NewWorkflowCallback,
  WorkflowCallbackRecord,
  WorkflowCallbackSettle,
  WorkflowCallbackSettleResult,
} from './workflow-store-callbacks.js';

/**
 * The engine signal a settled callback sends (key: the token's hash) so the waiting instance wakes;
 * the callback's row, not the signal, says how it ended.
 */
export const CALLBACK_SIGNAL = '$callback';

/** The SHA-256 of a token, hex: what the store keeps and finds a callback by. */
export function callbackTokenHash(token: string): string {
  return createHash('sha256').update(token).digest('hex');
}

/**
 * The callbacks' part of the storage layer, `WorkflowStorage.callbacks`: a completion's payload
 * passes the codecs here (encoded in, decoded out) as every other payload does.
 */
export class WorkflowCallbackStorage {
  constructor(
    private readonly store: WorkflowStore,
    private readonly encoding: PayloadEncoding | null,
  ) {}

  /** `null` when the store has callbacks; else its name, for the error. */
  unsupported(): string | null {
    const s = this.store;
    return s.createCallback && s.getCallback && s.settleCallback && s.expireCallback ? null : s.constructor.name;
  }

  create(callback: NewWorkflowCallback): Promise<boolean> {
    return this.required('createCallback')(callback);
  }

  /** Out: the callback, its payload decoded. */
  async get(id: string, name: string): Promise<WorkflowCallbackRecord | null> {
    const record = await this.required('getCallback')(id, name);
    if (record && this.encoding && record.payload !== null) {
      record.payload = await this.encoding.chain.decode(record.payload);
    }
    return record;
  }

  /** In: the payload (a completion's value, a failure's error). */
  async settle(settle: WorkflowCallbackSettle): Promise<WorkflowCallbackSettleResult> {
    const payload = this.encoding ? await this.encoding.chain.encode(settle.payload) : settle.payload;
    return this.required('settleCallback')({ ...settle, payload });
  }

  expire(id: string, name: string, now: number): Promise<boolean> {
    return this.required('expireCallback')(id, name, now);
  }

  private required<K extends 'createCallback' | 'getCallback' | 'settleCallback' | 'expireCallback'>(
    method: K,
  ): NonNullable<WorkflowStore[K]> {
    const fn = this.store[method];
    if (!fn) {
      throw new TypeError(
        `${this.store.constructor.name} has no callbacks (${method}): use a store that has them (every store this package ships does).`,
      );
    }
    return fn.bind(this.store) as NonNullable<WorkflowStore[K]>;
  }
}
