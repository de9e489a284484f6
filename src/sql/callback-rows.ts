import { fromJson, toJson, toNullableNumber, toNumber } from './workflow-rows.js';
import type {
  NewWorkflowCallback,
  WorkflowCallbackSettle,
  WorkflowCallbackRecord,
  WorkflowCallbackSettleResult,
  WorkflowCallbackState,
} from '../storage/workflow-store-callbacks.js';

/** The callback columns `toCallback()` reads (PostgreSQL reads `payload::text`). */
export const CALLBACK_COLUMNS = 'instance_id, name, state, payload, expires_at, created_at, settled_at';

/** A callback row as the store returns it. */
export function toCallback(row: Record<string, unknown>): WorkflowCallbackRecord {
  return {
    id: String(row.instance_id),
    name: String(row.name),
    state: row.state as WorkflowCallbackState,
    payload: fromJson(row.payload),
    expiresAt: toNullableNumber(row.expires_at),
    createdAt: toNumber(row.created_at),
    settledAt: toNullableNumber(row.settled_at),
  };
}

/** A settle's payload as stored: JSON text (checked as every payload is), `null` for none. */
export function callbackPayload(payload: unknown): string | null {
  return toJson(payload ?? null);
}

/**
 * Why a settle's conditional update changed nothing, from the row read after it by token hash
 * (`null`: no such token): settled or expired before, or past its time.
 */
export function refusedSettle(row: Record<string, unknown> | undefined, now: number): WorkflowCallbackSettleResult {
  if (!row) return { outcome: 'unknown' };
  if (row.state !== 'open') return { outcome: 'used' };
  const expiresAt = toNullableNumber(row.expires_at);
  return expiresAt !== null && expiresAt <= now ? { outcome: 'expired' } : { outcome: 'used' };
}

/** A SQL store's callbacks (one class per dialect), which `SqlWorkflowStoreBase` delegates to. */
export interface SqlCallbacks {
  create(callback: NewWorkflowCallback): Promise<boolean>;
  get(id: string, name: string): Promise<WorkflowCallbackRecord | null>;
  settle(settle: WorkflowCallbackSettle): Promise<WorkflowCallbackSettleResult>;
  expire(id: string, name: string, now: number): Promise<boolean>;
}
