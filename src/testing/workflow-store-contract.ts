import { cancelAtStartContract } from './contract/cancel-at-start.contract.js';
import { encryptionContract } from './contract/encryption.contract.js';
import { forkContract } from './contract/fork.contract.js';
import { parallelWaitsContract } from './contract/parallel-waits.contract.js';
import { retryChildRaceContract } from './contract/retry-child-race.contract.js';
import { scheduleChangeRaceContract } from './contract/schedule-change-race.contract.js';
import { terminateSlotsContract } from './contract/terminate-slots.contract.js';
import { claimLimitsContract } from './contract/claim-limits.contract.js';
import { claimContract } from './contract/claim.contract.js';
import { fairClaimsContract } from './contract/fair-claims.contract.js';
import {
  resolveTestApi,
  type ContractAppTransaction,
  type ContractSuite,
  type WorkflowContractTestApi,
  type WorkflowStoreHarness,
} from './contract/contract-suite.js';
import { createContract } from './contract/create.contract.js';
import { debounceContract } from './contract/debounce.contract.js';
import { deleteContract } from './contract/delete.contract.js';
import { getAndListContract } from './contract/get-and-list.contract.js';
import { listKeysetContract } from './contract/list-keyset.contract.js';
import { listenContract } from './contract/listen.contract.js';
import { payloadRewriteContract } from './contract/payload-rewrite.contract.js';
import { traceContextContract } from './contract/trace-context.contract.js';
import { countDueContract } from './contract/count-due.contract.js';
import { endNoticeContract } from './contract/end-notice.contract.js';
import { purgeContract } from './contract/purge.contract.js';
import { reencryptionContract } from './contract/reencryption.contract.js';
import { renewContract } from './contract/renew.contract.js';
import { reopenContract } from './contract/reopen.contract.js';
import { requestCancelContract } from './contract/request-cancel.contract.js';
import { scheduleOccurrenceContract } from './contract/schedule-occurrence.contract.js';
import { schedulesContract } from './contract/schedules.contract.js';
import { signalsContract } from './contract/signals.contract.js';
import { streamsContract } from './contract/streams.contract.js';
import { callbacksContract } from './contract/callbacks.contract.js';
import { untakenSignalsContract } from './contract/untaken-signals.contract.js';
import { signalCursorContract } from './contract/signal-cursor.contract.js';
import { writeAtomicityContract } from './contract/write-atomicity.contract.js';
import { writeContract } from './contract/write.contract.js';
import { pauseContract } from './contract/pause.contract.js';
import { bulkContract } from './contract/bulk.contract.js';
import { processesContract } from './contract/processes.contract.js';

export type {
  ContractAppTransaction,
  WorkflowContractTestApi,
  WorkflowStoreHarness,
} from './contract/contract-suite.js';

export interface WorkflowStoreContractOptions {
  /** A reason to register the suite as skipped (a database that isn't reachable); `false` runs it. */
  skip?: string | false;
  /**
   * The test runner's functions: `await import('vitest')` in a vitest spec. Default: the runner's
   * globals (Jest, or vitest with `globals: true`).
   */
  test?: WorkflowContractTestApi;
  /**
   * Check re-encryption's operations (`rewritePayloads`, `listSignals`, `rewriteSignalPayload`).
   * Default true: every store we ship has them. `false` for a store of your own that leaves them out
   * (its payloads can then never be re-encrypted under a new key).
   */
  reencryption?: boolean;
  /**
   * Check that `create()` keeps `traceContext` and every read returns it (telemetry joins an
   * instance's executions to its creator's trace through it). Default true. `false` for a store
   * that does not keep it: its instances read `traceContext: null`, and each execution's spans
   * start a trace of their own.
   */
  traceContext?: boolean;
  /**
   * Check `fork()` (`client.fork()`) and the bulk actions racing status changes. Default true;
   * `false` for a store of your own without `fork()` (the bulk actions are then left unchecked too).
   */
  fork?: boolean;
  /**
   * An empty store of its own (a new database or schema, with `dump` to read all it holds) for each
   * scenario that needs the whole store to itself: payload encryption (no plaintext anywhere) and
   * re-encryption (every payload rewritten, beside a working engine). Called once per such test;
   * its `close` runs after it. Without it those scenarios are registered as skipped.
   */
  emptyStore?: () => Promise<WorkflowStoreHarness> | WorkflowStoreHarness;
  /**
   * Opens a transaction of the application's own on the store's database, for the scenarios where
   * a signal sent in it commits after other work (the signal cursor of an instance created
   * meanwhile). The suite commits or rolls back each one it opens. Without it those scenarios are
   * registered as skipped.
   */
  appTransaction?: () => Promise<ContractAppTransaction>;
}

/** The areas of the contract, one file each under `contract/`, registered in this order. */
const AREAS: Array<(suite: ContractSuite) => void> = [
  createContract,
  debounceContract,
  getAndListContract,
  listKeysetContract,
  countDueContract,
  requestCancelContract,
  claimContract,
  claimLimitsContract,
  fairClaimsContract,
  renewContract,
  writeContract,
  writeAtomicityContract,
  signalsContract,
  untakenSignalsContract,
  signalCursorContract,
  reopenContract,
  endNoticeContract,
  listenContract,
  deleteContract,
  purgeContract,
  schedulesContract,
  scheduleOccurrenceContract,
  streamsContract,
  pauseContract,
  bulkContract,
  callbacksContract,
  processesContract,
];

/**
 * The engine run on the store (wired without Nest, see `contract/contract-engine.ts`): races
 * between an execution and the store's answers that only a whole engine shows, one file each.
 */
const ENGINE_SCENARIOS: Array<(suite: ContractSuite) => void> = [
  cancelAtStartContract,
  parallelWaitsContract,
  terminateSlotsContract,
  retryChildRaceContract,
  scheduleChangeRaceContract,
  encryptionContract,
];

/**
 * Registers test suites (vitest or Jest) that check a `WorkflowStore` against every rule of its interface:
 * results, ordering, filters and paging, what each call must leave unchanged, and the races, run
 * with real concurrency (calls started together, which a SQL store's pool spreads over several
 * connections). `makeStore` runs before every test; `close` after it. A store may be shared by
 * tests (and kept between runs): each test uses its own ids, workflow names and signal names, and
 * purge tests their own stretch of time below `BASE_TIME`. Then it runs the engine on the store
 * through the races only a whole engine shows, and, on `emptyStore()`, payload encryption and
 * re-encryption.
 *
 * ```ts
 * workflowStoreContract('postgres', async () => {
 *   const pool = new Pool({ connectionString });
 *   return { store: new PostgresWorkflowStore({ executor: fromPg(pool) }), close: () => pool.end() };
 * }, { test: await import('vitest') });
 * ```
 */
export function workflowStoreContract(
  name: string,
  makeStore: () => Promise<WorkflowStoreHarness> | WorkflowStoreHarness,
  options: WorkflowStoreContractOptions = {},
): void {
  const test = resolveTestApi(options.test);
  if (typeof options.skip === 'string') {
    test.describe.skip(`${name} store contract (${options.skip})`, () => {
      test.it('is skipped', () => undefined);
    });
    return;
  }

  test.describe(`${name} store contract`, () => {
    let harness: WorkflowStoreHarness | undefined;
    const emptyStores: WorkflowStoreHarness[] = [];
    test.beforeEach(async () => {
      harness = await makeStore();
    });
    test.afterEach(async () => {
      await harness?.close?.();
      harness = undefined;
      for (const empty of emptyStores.splice(0)) await empty.close?.();
    });

    const suite: ContractSuite = {
      test,
      get store() {
        if (!harness) throw new Error('The store contract reads its store only inside a test.');
        return harness.store;
      },
      emptyStore: options.emptyStore
        ? async () => {
            const empty = await options.emptyStore!();
            emptyStores.push(empty);
            return empty;
          }
        : undefined,
      appTransaction: options.appTransaction,
    };
    for (const area of AREAS) area(suite);
    for (const scenario of ENGINE_SCENARIOS) scenario(suite);
    if (options.reencryption !== false) {
      payloadRewriteContract(suite);
      reencryptionContract(suite);
    }
    if (options.traceContext !== false) traceContextContract(suite);
    if (options.fork !== false) forkContract(suite);
  });
}
