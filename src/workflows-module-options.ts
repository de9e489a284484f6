import { shownValue } from './errors/shown-value.js';
import type { ConfigurableModuleAsyncOptions, Type } from '@nestjs/common';
import type { WorkflowPayloadCodec } from './codec/workflow-payload-codec.js';
import { resolveJournalLimits, type JournalLimits, type WorkflowJournalLimits } from './engine/journal-limits.js';
import { DEFAULT_RETRY, resolveRetry, type RetryPolicy, type WorkflowRetry } from './engine/retry-policy.js';
import type { WorkflowStore } from './storage/workflow-store.js';
import type { RuntimeWorkerSettings } from './runtime/workflow-runtime.js';
import { durationOr, type Duration } from './time/duration.js';
import { checkKnownKeys } from './options/known-keys.js';
import { systemClock, type WorkflowClock } from './time/workflow-clock.js';

/** The background worker of this process. */
export interface WorkflowWorkerOptions {
  /** Run the polling loop. Default true; with false, `WorkflowWorker.drain()` runs due work on demand. */
  enabled?: boolean;
  /** Shown as `leaseOwner`. Default `hostname:pid:random`. */
  id?: string;
  /** Instances executed at once by this process (one whose last write is on its way no longer counts). Default 10. */
  concurrency?: number;
  /** How often to look for due instances. Default `'1s'`; local starts and signals wake it at once. */
  pollInterval?: Duration;
  /** How long a claim holds without a heartbeat: a crashed worker's instances run again after it. Default `'30s'`. */
  leaseDuration?: Duration;
  /** How often running instances renew their lease. Default a third of `leaseDuration`. */
  heartbeatInterval?: Duration;
  /** How long shutdown waits for running executions to hand back. Default `'10s'`. */
  shutdownTimeout?: Duration;
  /**
   * At startup, replay a sample of the unfinished instances of each workflow version this process
   * runs against its code (reading only) and log a warning for each that would diverge (see
   * docs/deploying-changes.md). `true` samples 100 per version; `{ sample }` sets how many.
   * Default `false`.
   */
  replayCheck?: boolean | { sample?: number };
}

/** What `forRoot()` takes and `forRootAsync()`'s factory returns. Every option has a default. */
export interface WorkflowsModuleOptions {
  /** A `WorkflowStore` instance or class (Nest creates it). Default: `InMemoryWorkflowStore`. */
  store?: WorkflowStore | Type<WorkflowStore>;
  /** `false` is `{ enabled: false }`. */
  worker?: WorkflowWorkerOptions | false;
  /** Default: the system clock. `ManualWorkflowClock` (from `/testing`) in tests. */
  clock?: WorkflowClock;
  /** The default step retry: 3 attempts, 1s doubling up to 5m. A number of attempts, `false` or options. */
  retry?: WorkflowRetry;
  /** Journal size limits: warn at 1,000 entries or 1 MB, fail at 10,000 or 10 MB. */
  journal?: WorkflowJournalLimits;
  /**
   * Payload codecs (encryption at rest, see docs/encryption.md): a `WorkflowPayloadCodec` such as
   * `AesGcmPayloadCodec`, its class (Nest creates it), or a list `[current, ...older]`: the first
   * encodes everything written from now on; each decodes what it wrote, so a rotated-out key keeps
   * reading until re-encryption has rewritten its payloads. Default: none (payloads stored as JSON).
   */
  codec?: WorkflowPayloadCodec | Type<WorkflowPayloadCodec> | Array<WorkflowPayloadCodec | Type<WorkflowPayloadCodec>>;
  /**
   * With a `codec`, refuse to read payloads stored without one (written before the codec was
   * configured) instead of reading them as they are: an instance holding one is handed back, as for
   * a missing key, until `nest-workflows reencrypt` has encoded it. Default false.
   */
  requireEncodedPayloads?: boolean;
  /**
   * With `NODE_ENV=production` and the in-memory store, startup fails: every running instance
   * would be lost on restart. Set this to run on it anyway (a demo, a throwaway tool).
   */
  allowInMemoryStorage?: boolean;
  /**
   * Log each instance that ends `failed` or `compensation_failed` at warn, with its id, workflow,
   * version and error. Default true; `false` leaves it to your `WorkflowEvents` subscribers.
   */
  logFailures?: boolean;
  /**
   * How often startup tries the store again when its first connection fails (the database is not
   * up yet), as `@nestjs/typeorm` does: each failed attempt is logged, and startup fails after the
   * last. Default 9 (so about half a minute with the default delay); 0 fails at once.
   */
  retryAttempts?: number;
  /** The wait between those attempts. Default `'3s'`. */
  retryDelay?: Duration;
  /**
   * OpenTelemetry spans and metrics (see docs/observability.md) through `@opentelemetry/api`, an
   * optional peer: with it installed they go to whatever SDK the application registered; without
   * it (or with `false`) nothing is observed and nothing is loaded. Default `true`.
   */
  telemetry?: boolean;
}

/** Implemented by a `forRootAsync({ useClass })` class. */
export interface WorkflowsOptionsFactory {
  createWorkflowsOptions(): WorkflowsModuleOptions | Promise<WorkflowsModuleOptions>;
}

/** What `forRootAsync()` takes. */
export type WorkflowsModuleAsyncOptions = Omit<
  ConfigurableModuleAsyncOptions<WorkflowsModuleOptions, 'createWorkflowsOptions'>,
  'provideInjectionToken'
> & {
  /** Default true: the client, worker and events are injectable everywhere. */
  isGlobal?: boolean;
};

/** The options with every default applied and validated: the one place defaults live. */
export interface ResolvedWorkflowsOptions {
  store: WorkflowStore | Type<WorkflowStore> | undefined;
  worker: RuntimeWorkerSettings;
  clock: WorkflowClock;
  retry: RetryPolicy;
  journal: JournalLimits;
  /** The codecs, the current one first; empty: none. */
  codec: Array<WorkflowPayloadCodec | Type<WorkflowPayloadCodec>>;
  requireEncodedPayloads: boolean;
  allowInMemoryStorage: boolean;
  logFailures: boolean;
  retryAttempts: number;
  retryDelay: number;
  telemetry: boolean;
}

const WORKER_OPTIONS = [
  'enabled',
  'id',
  'concurrency',
  'pollInterval',
  'leaseDuration',
  'heartbeatInterval',
  'shutdownTimeout',
  'replayCheck',
];
const KNOWN_OPTIONS = [
  'store',
  'worker',
  'clock',
  'retry',
  'journal',
  'codec',
  'requireEncodedPayloads',
  'allowInMemoryStorage',
  'logFailures',
  'retryAttempts',
  'retryDelay',
  'telemetry',
];

/** Validates the module options and applies defaults; errors name the option and say what to pass. */
export function resolveWorkflowsOptions(options: WorkflowsModuleOptions | undefined): ResolvedWorkflowsOptions {
  const given = options ?? {};
  if (typeof given !== 'object') throw new TypeError(`WorkflowsModule options must be an object; got ${typeof given}.`);
  for (const key of Object.keys(given)) {
    if (!KNOWN_OPTIONS.includes(key)) {
      throw new TypeError(`Unknown WorkflowsModule option "${key}". Known options: ${KNOWN_OPTIONS.join(', ')}.`);
    }
  }
  const store = given.store;
  if (store !== undefined && typeof store !== 'function' && !isStore(store)) {
    throw new TypeError(
      'Invalid WorkflowsModule option "store": pass a WorkflowStore instance (with create, claim, write...) or its class.',
    );
  }
  const clock = given.clock ?? systemClock;
  if (typeof clock?.now !== 'function')
    throw new TypeError(
      'Invalid WorkflowsModule option "clock": pass an object with now(): number, such as ManualWorkflowClock.',
    );
  const codec = given.codec === undefined ? [] : validateCodec(given.codec);
  if (given.requireEncodedPayloads !== undefined && typeof given.requireEncodedPayloads !== 'boolean') {
    throw new TypeError('Invalid WorkflowsModule option "requireEncodedPayloads": use true or false.');
  }
  if (given.requireEncodedPayloads && codec.length === 0) {
    throw new TypeError(
      'WorkflowsModule option "requireEncodedPayloads" needs a "codec": without one every payload is stored unencoded.',
    );
  }
  if (given.telemetry !== undefined && typeof given.telemetry !== 'boolean')
    throw new TypeError('Invalid WorkflowsModule option "telemetry": use true or false.');
  const worker = given.worker === false ? { enabled: false } : (given.worker ?? {});
  if (typeof worker !== 'object' || worker === null)
    throw new TypeError('Invalid WorkflowsModule option "worker": pass false or an object.');
  checkKnownKeys(worker, WORKER_OPTIONS, 'WorkflowsModule option "worker"');
  const concurrency = worker.concurrency ?? 10;
  if (!Number.isInteger(concurrency) || concurrency < 1) {
    throw new TypeError(
      `Invalid WorkflowsModule option "worker.concurrency": ${shownValue(concurrency)}. Use a whole number, 1 or more.`,
    );
  }
  if (worker.id !== undefined && (typeof worker.id !== 'string' || worker.id === '')) {
    throw new TypeError('Invalid WorkflowsModule option "worker.id": use a non-empty string.');
  }
  const leaseDuration = durationOr(worker.leaseDuration, 30_000, 'WorkflowsModule option "worker.leaseDuration"');
  if (leaseDuration < 1_000)
    throw new TypeError(
      `Invalid WorkflowsModule option "worker.leaseDuration": ${leaseDuration} ms. Use at least '1s'.`,
    );
  const heartbeatInterval = durationOr(
    worker.heartbeatInterval,
    Math.floor(leaseDuration / 3),
    'WorkflowsModule option "worker.heartbeatInterval"',
  );
  if (heartbeatInterval <= 0 || heartbeatInterval >= leaseDuration) {
    throw new TypeError(
      `Invalid WorkflowsModule option "worker.heartbeatInterval": ${heartbeatInterval} ms. It must be above 0 and below worker.leaseDuration (${leaseDuration} ms), or leases lapse between heartbeats.`,
    );
  }
  if (given.logFailures !== undefined && typeof given.logFailures !== 'boolean') {
    throw new TypeError('Invalid WorkflowsModule option "logFailures": use true or false.');
  }
  const retryAttempts = given.retryAttempts ?? 9;
  if (!Number.isInteger(retryAttempts) || retryAttempts < 0) {
    throw new TypeError(
      `Invalid WorkflowsModule option "retryAttempts": ${shownValue(retryAttempts)}. Use a whole number, 0 or more.`,
    );
  }
  const pollInterval = durationOr(worker.pollInterval, 1_000, 'WorkflowsModule option "worker.pollInterval"');
  if (pollInterval < 1) throw new TypeError('Invalid WorkflowsModule option "worker.pollInterval": use at least 1 ms.');
  return {
    store,
    worker: {
      enabled: worker.enabled ?? true,
      id: worker.id,
      concurrency,
      pollInterval,
      leaseDuration,
      heartbeatInterval,
      shutdownTimeout: durationOr(worker.shutdownTimeout, 10_000, 'WorkflowsModule option "worker.shutdownTimeout"'),
      replayCheck: replayCheckSample(worker.replayCheck),
    },
    clock,
    retry: resolveRetry(given.retry, 'WorkflowsModule option "retry"', DEFAULT_RETRY),
    journal: resolveJournalLimits(given.journal),
    codec,
    requireEncodedPayloads: given.requireEncodedPayloads ?? false,
    allowInMemoryStorage: given.allowInMemoryStorage ?? false,
    logFailures: given.logFailures ?? true,
    retryAttempts,
    retryDelay: durationOr(given.retryDelay, 3_000, 'WorkflowsModule option "retryDelay"'),
    telemetry: given.telemetry ?? true,
  };
}

function isStore(value: unknown): value is WorkflowStore {
  const store = value as Partial<WorkflowStore> | null;
  return (
    !!store &&
    typeof store.create === 'function' &&
    typeof store.claim === 'function' &&
    typeof store.write === 'function'
  );
}

function validateCodec(codec: unknown): Array<WorkflowPayloadCodec | Type<WorkflowPayloadCodec>> {
  const list: unknown[] = Array.isArray(codec) ? codec : [codec];
  if (list.length === 0)
    throw new TypeError(
      'Invalid WorkflowsModule option "codec": the list is empty. Leave the option out for no codec.',
    );
  list.forEach((item, index) => {
    const where = Array.isArray(codec) ? `codec[${index}]` : 'codec';
    if (typeof item === 'function') return;
    const candidate = item as Partial<WorkflowPayloadCodec> | null;
    if (
      !candidate ||
      typeof candidate.encode !== 'function' ||
      typeof candidate.decode !== 'function' ||
      typeof candidate.id !== 'string'
    ) {
      throw new TypeError(
        `Invalid WorkflowsModule option "${where}": pass a WorkflowPayloadCodec (an object with id, encode() and decode(), ` +
          'such as new AesGcmPayloadCodec({ key, id })), its class, or a list of them with the current one first.',
      );
    }
  });
  return list as Array<WorkflowPayloadCodec | Type<WorkflowPayloadCodec>>;
}

/** `worker.replayCheck` as the number of instances sampled per version (`null`: off). */
function replayCheckSample(option: WorkflowWorkerOptions['replayCheck']): number | null {
  if (option === undefined || option === false) return null;
  if (option === true) return 100;
  const sample = typeof option === 'object' && option !== null ? (option.sample ?? 100) : undefined;
  if (typeof option !== 'object' || option === null || !Number.isInteger(sample) || sample! < 1) {
    throw new TypeError(
      `Invalid WorkflowsModule option "worker.replayCheck": ${shownValue(option)}. Use true, false or { sample: n } with a whole n of 1 or more.`,
    );
  }
  checkKnownKeys(option, ['sample'], 'WorkflowsModule option "worker.replayCheck"');
  return sample!;
}
