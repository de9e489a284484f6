import { randomBytes } from 'node:crypto';
import { deserializeError, serializeError } from '../errors/serialize-error.js';
import type { SerializedWorkflowError } from '../errors/serialized-workflow-error.js';
import { WorkflowCallbackTimeoutError } from '../errors/workflow-callback-timeout.error.js';
import { isWorkflowInterrupt } from '../errors/workflow-interrupt.js';
import { plainCopy } from '../storage/plain-copy.js';
import {
  CALLBACK_SIGNAL,
  callbackTokenHash,
  type WorkflowCallbackStorage,
} from '../storage/workflow-callback-storage.js';
import type { WorkflowCallbackRecord } from '../storage/workflow-store-callbacks.js';
import { checkOptions } from '../options/known-keys.js';
import { parsePositiveDuration } from '../time/duration.js';
import type { OperationHost } from './execution-host.js';
import type { WorkflowCallbackOptions } from './workflow-context.js';

/** The journal entry of `createCallback(name)`: its token and expiry, so every replay hands out the same token. */
function createdName(name: string): string {
  return `$callback:${name}`;
}

/** The longest callback name (the MySQL store's column is `VARCHAR(255)`). */
const MAX_NAME = 255;

/**
 * `ctx.createCallback()` and `ctx.waitForCallback()` for one execution. The token (256 random bits,
 * base64url) is made once and journaled; the store keeps its hash. The wait reads the callback's row:
 * how it ended is decided there (a completion, a failure and the timeout each move it from `open`
 * by one conditional update), and the `$callback` signal that a settle sends only wakes the instance.
 */
export class CallbackOperations {
  constructor(
    private readonly host: OperationHost,
    private readonly storage: WorkflowCallbackStorage,
    /** A store failure: stops the execution (it is not the workflow's). */
    private readonly storeFailed: (error: unknown) => never,
  ) {}

  async create(name: string, options: WorkflowCallbackOptions = {}): Promise<{ token: string }> {
    checkName(name);
    checkOptions(options, ['timeout'], `options of callback "${name}"`);
    const { host } = this;
    const unsupported = this.storage.unsupported();
    if (unsupported !== null) {
      throw new TypeError(`ctx.createCallback() needs a store with callbacks, and ${unsupported} has none.`);
    }
    const timeout =
      options.timeout === undefined ? null : parsePositiveDuration(options.timeout, `timeout of callback "${name}"`);
    host.admitOperation(createdName(name), 'value', true);
    const entry = host.journalEntry(createdName(name));
    if (entry) return { token: (entry.value as { token: string }).token };
    const now = host.now();
    const token = randomBytes(32).toString('base64url');
    const expiresAt = timeout === null ? null : now + timeout;
    await this.stored(() =>
      this.storage.create({ id: host.instance.id, name, tokenHash: callbackTokenHash(token), expiresAt, now }),
    );
    host.record({
      name: createdName(name),
      kind: 'value',
      state: 'completed',
      value: { token, expiresAt },
      createdAt: now,
      updatedAt: now,
    });
    // Journaled before the token leaves the workflow: a replay must hand out this one, which the store holds.
    await host.flush();
    return { token };
  }

  async wait<T>(name: string): Promise<T> {
    checkName(name);
    const { host } = this;
    host.admitOperation(name, 'signal');
    const entry = host.journalEntry(name);
    if (entry?.state === 'completed') return plainCopy(entry.value) as T;
    if (entry?.state === 'failed') throw deserializeError(entry.error!);
    const created = host.journalEntry(createdName(name))?.value as
      { token: string; expiresAt: number | null } | undefined;
    if (!created) {
      throw new TypeError(
        `ctx.waitForCallback("${name}") before ctx.createCallback("${name}"): create the callback first, and hand out its token.`,
      );
    }
    if (host.replayOnly) return host.suspendOperation({ wakeAt: null, wait: null });
    const id = host.instance.id;
    let record = await this.stored(() => this.storage.get(id, name));
    const now = host.now();
    if (record?.state === 'open' && created.expiresAt !== null && created.expiresAt <= now) {
      // The timeout's one conditional update: it lands, or a completion that landed first stands.
      const expired = await this.stored(() => this.storage.expire(id, name, now));
      record = expired ? { ...record, state: 'expired' } : await this.stored(() => this.storage.get(id, name));
    }
    host.throwIfStopped();
    if (!record || record.state === 'open') {
      return host.suspendOperation({
        wakeAt: created.expiresAt,
        wait: { name: CALLBACK_SIGNAL, key: callbackTokenHash(created.token) },
      });
    }
    return this.settled<T>(name, record, now);
  }

  private settled<T>(name: string, record: WorkflowCallbackRecord, now: number): T {
    const { host } = this;
    const wait = { name: CALLBACK_SIGNAL, key: null };
    if (record.state === 'completed') {
      host.record({
        name,
        kind: 'signal',
        state: 'completed',
        value: record.payload,
        signal: wait,
        createdAt: now,
        updatedAt: now,
      });
      return plainCopy(record.payload) as T;
    }
    const error =
      record.state === 'failed'
        ? (record.payload as SerializedWorkflowError)
        : serializeError(
            new WorkflowCallbackTimeoutError(
              `Callback "${name}" of instance "${host.instance.id}" was neither completed nor failed before its timeout.`,
            ),
          );
    host.record({ name, kind: 'signal', state: 'failed', error, signal: wait, createdAt: now, updatedAt: now });
    throw deserializeError(error);
  }

  /** A store call of the operation: the execution neither suspends nor ends meanwhile, and a failure stops it. */
  private async stored<R>(call: () => Promise<R>): Promise<R> {
    this.host.operationStarted();
    try {
      return await call().catch((error: unknown) => {
        if (isWorkflowInterrupt(error)) throw error;
        return this.storeFailed(error);
      });
    } finally {
      this.host.operationSettled();
    }
  }
}

function checkName(name: unknown): asserts name is string {
  if (typeof name !== 'string' || name === '' || name.length > MAX_NAME) {
    throw new TypeError(
      `Invalid callback name ${JSON.stringify(name)}: use a non-empty string of at most ${MAX_NAME} characters.`,
    );
  }
}
