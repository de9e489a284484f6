import type { WorkflowStore } from '../storage/workflow-store.js';
import { claimLimitsContract } from './contract/claim-limits.contract.js';
import { claimContract } from './contract/claim.contract.js';
import { resolveTestApi, type ContractSuite, type WorkflowContractTestApi } from './contract/contract-suite.js';
import { createContract } from './contract/create.contract.js';
import { deleteContract } from './contract/delete.contract.js';
import { getAndListContract } from './contract/get-and-list.contract.js';
import { listKeysetContract } from './contract/list-keyset.contract.js';
import { listenContract } from './contract/listen.contract.js';
import { payloadRewriteContract } from './contract/payload-rewrite.contract.js';
import { traceContextContract } from './contract/trace-context.contract.js';
import { countDueContract } from './contract/count-due.contract.js';
import { endNoticeContract } from './contract/end-notice.contract.js';
import { purgeContract } from './contract/purge.contract.js';
import { renewContract } from './contract/renew.contract.js';
import { reopenContract } from './contract/reopen.contract.js';
import { requestCancelContract } from './contract/request-cancel.contract.js';
import { scheduleOccurrenceContract } from './contract/schedule-occurrence.contract.js';
import { schedulesContract } from './contract/schedules.contract.js';
import { signalsContract } from './contract/signals.contract.js';
import { untakenSignalsContract } from './contract/untaken-signals.contract.js';
import { writeAtomicityContract } from './contract/write-atomicity.contract.js';
import { writeContract } from './contract/write.contract.js';

export type { WorkflowContractTestApi } from './contract/contract-suite.js';

/** A store under test, and how to release what it holds once a test ends. */
export interface WorkflowStoreHarness {
  store: WorkflowStore;
  /** Called after every test (close a pool, drop a schema...). */
  close?: () => Promise<void>;
}

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
}

/** The areas of the contract, one file each under `contract/`, registered in this order. */
const AREAS: Array<(suite: ContractSuite) => void> = [
  createContract,
  getAndListContract,
  listKeysetContract,
  countDueContract,
  requestCancelContract,
  claimContract,
  claimLimitsContract,
  renewContract,
  writeContract,
  writeAtomicityContract,
  signalsContract,
  untakenSignalsContract,
  reopenContract,
  endNoticeContract,
  listenContract,
  deleteContract,
  purgeContract,
  schedulesContract,
  scheduleOccurrenceContract,
];

/**
 * Registers test suites (vitest or Jest) that check a `WorkflowStore` against every rule of its interface:
 * results, ordering, filters and paging, what each call must leave unchanged, and the races, run
 * with real concurrency (calls started together, which a SQL store's pool spreads over several
 * connections). `makeStore` runs before every test; `close` after it. A store may be shared by
 * tests (and kept between runs): each test uses its own ids, workflow names and signal names, and
 * purge tests their own stretch of time below `BASE_TIME`.
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
    test.beforeEach(async () => {
      harness = await makeStore();
    });
    test.afterEach(async () => {
      await harness?.close?.();
      harness = undefined;
    });

    const suite: ContractSuite = {
      test,
      get store() {
        if (!harness) throw new Error('The store contract reads its store only inside a test.');
        return harness.store;
      },
    };
    for (const area of AREAS) area(suite);
    if (options.reencryption !== false) payloadRewriteContract(suite);
    if (options.traceContext !== false) traceContextContract(suite);
  });
}
