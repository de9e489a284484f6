import type { EngineLogger } from '../engine/workflow-engine.js';

/**
 * A short account of a store failure: the driver's code (`ECONNREFUSED`, a SQLSTATE) and message,
 * from the error or what it wraps (Node reports a refused `localhost` as an AggregateError with an
 * empty message, one error per address tried). No stack: one line that says what happened.
 */
export function describeStoreError(error: unknown): string {
  const seen = new Set<unknown>();
  let current: unknown = error;
  let code: string | undefined;
  let message = '';
  while (current instanceof Error && !seen.has(current)) {
    seen.add(current);
    const candidate = current as Error & { code?: unknown; errors?: unknown[] };
    if (code === undefined && typeof candidate.code === 'string') code = candidate.code;
    const inner = Array.isArray(candidate.errors) ? candidate.errors.filter((e): e is Error => e instanceof Error) : [];
    if (!message) message = candidate.message || inner.map((e) => e.message).join('; ');
    if (code === undefined)
      code = inner.map((e) => (e as Error & { code?: unknown }).code).find((c): c is string => typeof c === 'string');
    current = candidate.cause;
  }
  if (!message) message = String(error);
  return code && !message.includes(code) ? `${code}: ${message}` : message;
}

/**
 * One worker's view of its store's health, so an outage is logged once, with its cause, instead of
 * once per poll, heartbeat and execution: the first failure logs an error, later ones are counted,
 * and the first success after them logs that the store answers again. A store error is never
 * reported as a lost lease: while the database can't be reached, nobody else can claim either.
 */
export class StoreOutage {
  private since: number | null = null;
  private failures = 0;

  constructor(
    private readonly logger: EngineLogger,
    private readonly now: () => number = Date.now,
  ) {}

  /** Whether the last store call failed (and none succeeded since). */
  get down(): boolean {
    return this.since !== null;
  }

  /** A store call failed while doing `during` (e.g. `claiming instances`). */
  failed(error: unknown, during: string): void {
    this.failures++;
    if (this.since !== null) return;
    this.since = this.now();
    this.logger.error(
      `The workflow store failed while ${during}: ${describeStoreError(error)}. This worker backs off and retries; ` +
        'it says so when the store answers again. Executions cut short run again once their leases lapse.',
    );
  }

  /** A store call succeeded: ends the outage, if one was going on. */
  recovered(): void {
    if (this.since === null) return;
    const seconds = ((this.now() - this.since) / 1000).toFixed(1);
    this.logger.warn(`The workflow store answers again, after ${seconds} s and ${this.failures} failed call(s).`);
    this.since = null;
    this.failures = 0;
  }
}
