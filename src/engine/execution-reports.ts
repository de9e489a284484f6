import type { SerializedWorkflowError } from '../errors/serialized-workflow-error.js';
import type { WorkflowInstance, WorkflowStatus } from '../storage/workflow-instance.js';
import type { WorkflowStorage } from '../storage/workflow-storage.js';
/** The engine's logger (`EngineLogger`), as far as the reports use it. */
interface ReportLogger {
  warn(message: string): void;
  error(message: string, error?: unknown): void;
}

/** What the reports below need of the engine's options. */
interface ReportOptions {
  storage: WorkflowStorage;
  logger: ReportLogger;
  onStoreError?(error: unknown, during: string): void;
}

/** A store call threw while `during`: to the outage account when there is one (logged once per outage), else logged. */
export function reportStoreError(options: ReportOptions, error: unknown, during: string): void {
  if (options.onStoreError) options.onStoreError(error, during);
  else options.logger.error(`The workflow store failed while ${during}; it runs again when its lease lapses.`, error);
}

/**
 * The store answered, and the lease token no longer matched: says who holds the instance now
 * (read back), or that it is gone. Only then is it a lost lease.
 */
export async function reportLostLease(options: ReportOptions, instance: WorkflowInstance): Promise<void> {
  let now: WorkflowInstance | null;
  try {
    now = await options.storage.get(instance.id);
  } catch (error) {
    reportStoreError(options, error, `reading back "${instance.id}" after a write was refused`);
    return;
  }
  if (now !== null && now.leaseToken === instance.leaseToken) {
    options.logger.warn(
      `Stopped "${instance.id}" (${instance.workflow}@${instance.version}) before its next side effect: its lease ran out by ` +
        "this process's clock (the process was stalled, or its heartbeats failed). It runs again once a worker claims it.",
    );
    return;
  }
  const holder =
    now === null
      ? 'it was deleted meanwhile'
      : now.leaseToken !== null
        ? `worker "${now.leaseOwner ?? 'unknown'}" holds it now`
        : `it is ${now.status} now, released by worker "${now.leaseOwner ?? 'unknown'}"`;
  options.logger.warn(
    `Lost the lease on "${instance.id}" (${instance.workflow}@${instance.version}): ${holder}. Nothing this execution did after that was recorded.`,
  );
}

/** An instance that ended `failed` or `compensation_failed`, at warn, with what an operator needs to find it. */
export function reportFailure(
  logger: ReportLogger,
  instance: WorkflowInstance,
  status: WorkflowStatus,
  error: SerializedWorkflowError,
): void {
  const compensation = (error as SerializedWorkflowError & { compensation?: SerializedWorkflowError }).compensation;
  logger.warn(
    `Instance "${instance.id}" of ${instance.workflow}@${instance.version} ended ${status}: ${error.name}: ${error.message}` +
      (compensation ? `; its compensation failed too: ${compensation.name}: ${compensation.message}` : ''),
  );
}

/**
 * Whether `error` looks like the database being unreachable or going away (a driver's error code,
 * a refused or dropped connection, a timeout) rather than a bug: such errors are logged once per
 * outage, without a stack, instead of once per execution.
 */
export function looksLikeStoreError(error: unknown): boolean {
  if (!(error instanceof Error)) return false;
  const code = (error as Error & { code?: unknown }).code;
  // Node's socket codes, PostgreSQL's connection and shutdown SQLSTATEs, mysql2's lost connection and server shutdown.
  if (
    typeof code === 'string' &&
    /^(E[A-Z]+$|08|57P|53|PROTOCOL_CONNECTION_LOST|ER_SERVER_SHUTDOWN|ER_CONNECTION_KILLED)/.test(code)
  )
    return true;
  if (error instanceof AggregateError) return error.errors.some(looksLikeStoreError);
  return /connection terminated|connect E|timeout exceeded when trying to connect|Connection ended/i.test(
    error.message,
  );
}
