import type {
  NewWorkflowCallback,
  WorkflowCallbackRecord,
  WorkflowCallbackSettle,
  WorkflowCallbackSettleResult,
} from '../storage/workflow-store-callbacks.js';
import { plainCopy } from '../storage/plain-copy.js';

/**
 * The in-memory store's callbacks, by instance id and name, and by token hash. Each call is
 * synchronous, so a settle and an expiry are atomic on the event loop (a SQL store's conditional
 * update); the store drops an instance's callbacks when it deletes or purges the instance.
 */
export class InMemoryCallbacks {
  private readonly byInstance = new Map<string, Map<string, WorkflowCallbackRecord & { tokenHash: string }>>();
  private readonly byHash = new Map<string, WorkflowCallbackRecord & { tokenHash: string }>();

  create(callback: NewWorkflowCallback): void {
    let callbacks = this.byInstance.get(callback.id);
    const existing = callbacks?.get(callback.name);
    if (existing) {
      if (existing.state !== 'open') return;
      this.byHash.delete(existing.tokenHash);
      existing.tokenHash = callback.tokenHash;
      existing.expiresAt = callback.expiresAt;
      this.byHash.set(callback.tokenHash, existing);
      return;
    }
    const record = {
      id: callback.id,
      name: callback.name,
      tokenHash: callback.tokenHash,
      state: 'open' as const,
      payload: null,
      expiresAt: callback.expiresAt,
      createdAt: callback.now,
      settledAt: null,
    };
    if (!callbacks) this.byInstance.set(callback.id, (callbacks = new Map()));
    callbacks.set(callback.name, record);
    this.byHash.set(callback.tokenHash, record);
  }

  get(id: string, name: string): WorkflowCallbackRecord | null {
    const record = this.byInstance.get(id)?.get(name);
    if (!record) return null;
    const { tokenHash: _hash, ...rest } = record;
    return plainCopy(rest);
  }

  settle(settle: WorkflowCallbackSettle): WorkflowCallbackSettleResult {
    const record = this.byHash.get(settle.tokenHash);
    if (!record) return { outcome: 'unknown' };
    if (record.state !== 'open') return { outcome: 'used' };
    if (record.expiresAt !== null && record.expiresAt <= settle.now) return { outcome: 'expired' };
    record.state = settle.state;
    record.payload = plainCopy(settle.payload ?? null);
    record.settledAt = settle.now;
    return { outcome: 'settled', id: record.id, name: record.name };
  }

  expire(id: string, name: string, now: number): boolean {
    const record = this.byInstance.get(id)?.get(name);
    if (!record || record.state !== 'open') return false;
    record.state = 'expired';
    record.settledAt = now;
    return true;
  }

  /** The instance is gone: so are its callbacks. */
  drop(id: string): void {
    for (const record of this.byInstance.get(id)?.values() ?? []) this.byHash.delete(record.tokenHash);
    this.byInstance.delete(id);
  }
}
