import type { WorkflowStore } from '../../storage/workflow-store.js';

/** What the suite needs of a test runner: vitest's and Jest's functions both fit. */
export interface WorkflowContractTestApi {
  describe: ((name: string, fn: () => void) => void) & { skip: (name: string, fn: () => void) => void };
  it: (name: string, fn: () => Promise<void> | void, timeout?: number) => void;
  expect: (actual: unknown, message?: string) => any; // eslint-disable-line @typescript-eslint/no-explicit-any -- each runner types its own matchers
  beforeEach: (fn: () => Promise<void> | void) => void;
  afterEach: (fn: () => Promise<void> | void) => void;
}

/** A store under test, and how to release what it holds once a test ends. */
export interface WorkflowStoreHarness {
  store: WorkflowStore;
  /** Called after every test (close a pool, drop a schema...). */
  close?: () => Promise<void>;
  /**
   * Everything the store holds, as text (every row of every table; bytes as UTF-8). Given with
   * `emptyStore`, the encryption scenarios search it for any user-supplied value stored in plaintext.
   */
  dump?: () => Promise<string>;
}

/**
 * A transaction of the application's own on the store's database (a pooled client after `BEGIN`,
 * a connection after `beginTransaction()`, at READ COMMITTED), for `signalInTransaction()`: what
 * the races with a signal committed later than it was sent need.
 */
export interface ContractAppTransaction {
  /** What the store's `signalInTransaction()` takes. */
  handle: unknown;
  /** Commits, and gives the connection back. */
  commit(): Promise<void>;
  /** Rolls back, and gives the connection back. */
  rollback(): Promise<void>;
}

/**
 * What each area of the contract registers its tests with: the runner's functions, and the store
 * of the test that is running (a new one per test, so read `store` inside a test, never before).
 */
export interface ContractSuite {
  readonly test: WorkflowContractTestApi;
  readonly store: WorkflowStore;
  /**
   * An empty store of the test's own (the suite's `emptyStore` option), for scenarios that read or
   * rewrite the whole store; closed after the test. Absent without the option.
   */
  readonly emptyStore?: () => Promise<WorkflowStoreHarness>;
  /** Opens a transaction of the application's own (the suite's `appTransaction` option); absent without it. */
  readonly appTransaction?: () => Promise<ContractAppTransaction>;
}

/**
 * The runner's functions: the ones given, or the runner's globals (Jest, or vitest with
 * `globals: true`). The suite imports no runner itself, so `/testing` loads in CommonJS too
 * (vitest can't be required) and works under Jest as under vitest.
 */
export function resolveTestApi(given: WorkflowContractTestApi | undefined): WorkflowContractTestApi {
  const globals = globalThis as unknown as Partial<WorkflowContractTestApi>;
  const api =
    given ??
    (globals.describe && globals.it && globals.expect && globals.beforeEach && globals.afterEach
      ? (globals as WorkflowContractTestApi)
      : undefined);
  if (!api) {
    throw new TypeError(
      'workflowStoreContract() found no test runner: pass its functions, as in ' +
        "workflowStoreContract('my-store', makeStore, { test: await import('vitest') }), or run it under Jest or vitest with globals enabled.",
    );
  }
  return api;
}
