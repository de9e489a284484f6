import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import {
  findCycles,
  findFolderCycles,
  folderImports,
  frameworkLeaks,
  interfaceMembers,
  packageImports,
  packageLeaks,
  parseSource,
  readSources,
  storeAccess,
  type SourceFile,
  type StoreAccessRules,
} from '../support/source-graph.js';

// The architecture read off src/'s imports: the rules DESIGN.md and CONVENTIONS.md state, checked
// on every run (a parse of the sources, well under a second).

const SRC = fileURLToPath(new URL('../../src/', import.meta.url));
const STORE_METHODS = interfaceMembers(readFileSync(`${SRC}storage/workflow-store.ts`, 'utf8'), 'WorkflowStore');

/** Parts that import nothing from Nest, directly or through what they import (the scheduler's Nest service aside). */
const isCore = (path: string) =>
  /^(engine|leased-loop|storage|memory|time|codec|runtime|errors|signals)\//.test(path) ||
  (/^scheduler\//.test(path) && !path.endsWith('.service.ts'));

/** The testing entry (the store contract suite), which a store's author runs outside any Nest application. */
const isTesting = (path: string) => path.startsWith('testing/');
const isDriver = (name: string) => /^(pg|mysql2)(\/|$)/.test(name);
const isNestOrDriver = (name: string) => name.startsWith('@nestjs/') || isDriver(name);
/**
 * What the testing entry must not load: a driver, or the Nest that builds and boots applications.
 * The engine it drives still carries `@nestjs/common`'s decorators (`WorkflowClient`, `@Workflow`).
 */
const isDriverOrNestRuntime = (name: string) => isDriver(name) || /^@nestjs\/(core|testing)(\/|$)/.test(name);

const STORE_RULES: StoreAccessRules = {
  // The root entry only re-exports the public API, which includes InMemoryWorkflowStore; the
  // module's storage is built over the in-memory store when none is configured.
  // sql/ is what the SQL stores share (their base class, the claim under limits...).
  insider: (path) =>
    /^(storage|memory|sql|postgres|mysql|sqlite|testing)\//.test(path) ||
    path === 'index.ts' ||
    path === 'create-workflow-storage.ts',
  storeInternal: (path) =>
    /\.store\.ts$/.test(path) ||
    /^memory\//.test(path) ||
    /^storage\/claim-selection/.test(path) ||
    // Tools (the CLI) may use a SQL store's driver adapter, error explainer, migration, re-encryption,
    // reading-session and operator (-operate) helpers, nothing else of it.
    (/^(postgres|mysql|sqlite)\//.test(path) &&
      !/^(postgres|mysql|sqlite)\/(from-[a-z0-9-]+|connection-error|[a-z]+-(migrate|reencrypt|reading-session|operate))\.ts$/.test(
        path,
      )),
  // The module's options take the store the application configures; the root entry re-exports its type.
  mayNameInterface: (path) => path === 'workflows-module-options.ts' || path === 'index.ts',
};

/** The stores' folders: each implements the contract in storage/, which never imports them back. */
const STORE_FOLDERS = ['memory', 'sql', 'postgres', 'mysql', 'sqlite'];

/** Imports of a store's folder from storage/ (the contract and the codec layer). */
const storageImportsOfStores = (files: readonly SourceFile[]) =>
  STORE_FOLDERS.flatMap((store) => folderImports(files, 'storage', store));

/** Imports of one store's folder from another's: none, but the SQL stores' of sql/, which they share. */
const crossStoreImports = (files: readonly SourceFile[]) =>
  STORE_FOLDERS.flatMap((from) =>
    STORE_FOLDERS.filter((to) => to !== from && !(to === 'sql' && /^(postgres|mysql|sqlite)$/.test(from))).flatMap(
      (to) => folderImports(files, from, to),
    ),
  );

describe('the architecture of src/', () => {
  const files = readSources(SRC, STORE_METHODS);

  it('reads the whole source tree', () => {
    expect(files.length).toBeGreaterThan(50);
    expect(STORE_METHODS.has('write')).toBe(true);
  });

  it('has no import cycle between files', () => {
    expect(findCycles(files)).toEqual([]);
  });

  it('has no import cycle between the top-level folders of src/', () => {
    expect(findFolderCycles(files)).toEqual([]);
  });

  it('keeps the client and the worker apart: neither imports the other', () => {
    expect(folderImports(files, 'client', 'worker')).toEqual([]);
    expect(folderImports(files, 'worker', 'client')).toEqual([]);
  });

  it('keeps the leased loop generic: leased-loop/ imports nothing of the engine or the runtime it feeds', () => {
    expect([
      ...folderImports(files, 'leased-loop', 'engine'),
      ...folderImports(files, 'leased-loop', 'runtime'),
    ]).toEqual([]);
  });

  it('keeps the errors and the events free of the storage layer they cross', () => {
    expect([...folderImports(files, 'errors', 'storage'), ...folderImports(files, 'events', 'storage')]).toEqual([]);
  });

  it('keeps the store contract free of the stores: nothing in storage/ imports memory/, sql/, postgres/, mysql/ or sqlite/', () => {
    expect(storageImportsOfStores(files)).toEqual([]);
  });

  it('keeps each store in its own folder: none imports another, the SQL stores aside sharing sql/', () => {
    expect(crossStoreImports(files)).toEqual([]);
  });

  it('keeps the core framework-free: engine, storage, runtime, time, codec, the scheduler and the leased loop reach no @nestjs import', () => {
    expect(frameworkLeaks(files, isCore)).toEqual([]);
  });

  it('reaches the store only through WorkflowStorage: no outside file imports a store class or calls a store method', () => {
    expect(storeAccess(files, STORE_RULES)).toEqual([]);
  });

  it('keeps the testing entry free of Nest and the drivers: no file of testing/ imports @nestjs/*, pg or mysql2, none reaches a driver, @nestjs/core or @nestjs/testing', () => {
    expect(packageImports(files, isTesting, isNestOrDriver)).toEqual([]);
    expect(packageLeaks(files, isTesting, isDriverOrNestRuntime)).toEqual([]);
  });
});

describe('the architecture checks', () => {
  // Each check, on a small graph that breaks its rule: a check that can't fail proves nothing.
  const graph = (sources: Record<string, string>): SourceFile[] => {
    const known = new Set(Object.keys(sources));
    return Object.entries(sources).map(([path, text]) => parseSource(path, text, known, STORE_METHODS));
  };

  it('finds a cycle, type-only imports included', () => {
    const files = graph({
      'engine/a.ts': "import { b } from './b.js';\nexport const a = b;\n",
      'engine/b.ts': "import type { C } from '../other/c.js';\nexport const b = 1;\n",
      'other/c.ts': "export type { A } from '../engine/a.js';\nexport type C = number;\n",
      'other/d.ts': "import { a } from '../engine/a.js';\n",
    });
    expect(findCycles(files)).toEqual([['engine/a.ts', 'engine/b.ts', 'other/c.ts']]);
  });

  it('finds a cycle between folders whose files form none', () => {
    const files = graph({
      'engine/a.ts': "import { d } from '../worker/d.js';\nexport const a = d;\n",
      'engine/b.ts': 'export const b = 1;\n',
      'worker/c.ts': "import { b } from '../engine/b.js';\nexport const c = b;\n",
      'worker/d.ts': 'export const d = 1;\n',
      'client/e.ts': "import { a } from '../engine/a.js';\n",
    });
    expect(findCycles(files)).toEqual([]);
    expect(findFolderCycles(files)).toEqual([['engine', 'worker']]);
  });

  it('finds the client importing the worker, and the reverse', () => {
    const files = graph({
      'client/c.ts': "import { W } from '../worker/w.js';\n",
      'worker/w.ts': 'export class W {}\n',
      'worker/v.ts': "import type { C } from '../client/c.js';\n",
    });
    expect(folderImports(files, 'client', 'worker')).toEqual(['client/c.ts -> worker/w.ts']);
    expect(folderImports(files, 'worker', 'client')).toEqual(['worker/v.ts -> client/c.ts']);
  });

  it('finds a file of storage/ that imports a store', () => {
    const files = graph({
      'storage/workflow-store.ts': 'export interface WorkflowStore {}\n',
      'storage/limits.ts': "import { LIMITS } from '../postgres/key-limits.js';\nexport const limits = LIMITS;\n",
      'storage/default.ts': "import type { InMemoryWorkflowStore } from '../memory/in-memory-workflow.store.js';\n",
      'postgres/key-limits.ts':
        "import type { WorkflowStore } from '../storage/workflow-store.js';\nexport const LIMITS = 1;\n",
      'memory/in-memory-workflow.store.ts':
        "import type { WorkflowStore } from '../storage/workflow-store.js';\nexport class InMemoryWorkflowStore {}\n",
    });
    expect(storageImportsOfStores(files)).toEqual([
      'storage/default.ts -> memory/in-memory-workflow.store.ts',
      'storage/limits.ts -> postgres/key-limits.ts',
    ]);
  });

  it('finds a store that imports another store, and lets the SQL stores share sql/', () => {
    const files = graph({
      'sql/key-limits.ts': 'export const LIMITS = 1;\n',
      'postgres/key-limits.ts': "import { LIMITS } from '../sql/key-limits.js';\nexport const PG = LIMITS;\n",
      'mysql/key-limits.ts': "import { LIMITS } from '../sql/key-limits.js';\nexport const MY = LIMITS;\n",
      'memory/limits.ts':
        "import { PG } from '../postgres/key-limits.js';\nimport { LIMITS } from '../sql/key-limits.js';\nexport const M = PG + LIMITS;\n",
    });
    expect(crossStoreImports(files)).toEqual([
      'memory/limits.ts -> sql/key-limits.ts',
      'memory/limits.ts -> postgres/key-limits.ts',
    ]);
  });

  it('finds a core file that reaches @nestjs through another file', () => {
    const files = graph({
      'engine/e.ts': "import { s } from '../shell/s.js';\n",
      'shell/s.ts': "import { Injectable } from '@nestjs/common';\nexport const s = Injectable;\n",
    });
    expect(frameworkLeaks(files, isCore)).toEqual(['engine/e.ts -> shell/s.ts (@nestjs/common)']);
  });

  it('finds a file of testing/ that imports Nest or a driver, or reaches a driver or the Nest container through another file', () => {
    const files = graph({
      'testing/a.ts': "import { Test } from '@nestjs/testing';\n",
      'testing/b.ts': "import { store } from '../postgres/p.js';\n",
      'testing/c.ts': "import { Client } from '../client/c.js';\nexport const c = Client;\n",
      'testing/d.ts': "import type { Pool } from 'mysql2/promise';\nexport type D = Pool;\n",
      'postgres/p.ts': "import pg from 'pg';\nexport const store = pg;\n",
      'client/c.ts': "import { Injectable } from '@nestjs/common';\nexport class Client {}\n",
    });
    expect(packageImports(files, isTesting, isNestOrDriver)).toEqual([
      'testing/a.ts (@nestjs/testing)',
      'testing/d.ts (mysql2/promise)',
    ]);
    expect(packageLeaks(files, isTesting, isDriverOrNestRuntime)).toEqual([
      'testing/a.ts (@nestjs/testing)',
      'testing/b.ts -> postgres/p.ts (pg)',
      'testing/d.ts (mysql2/promise)',
    ]);
  });

  it('finds an outside file that imports a store class, names WorkflowStore or calls a store method', () => {
    const files = graph({
      'storage/workflow-store.ts': 'export interface WorkflowStore {}\n',
      'memory/in-memory-workflow.store.ts': 'export class InMemoryWorkflowStore {}\n',
      'postgres/postgres-claim.ts': 'export const claim = 1;\n',
      'postgres/from-pg.ts': 'export const fromPg = 1;\n',
      'client/a.ts': "import { InMemoryWorkflowStore } from '../memory/in-memory-workflow.store.js';\n",
      'engine/b.ts': "import type { WorkflowStore } from '../storage/workflow-store.js';\n",
      'worker/c.ts':
        'export async function c(options: { store: { claim(): void } }) {\n  await options.store.claim();\n}\n',
      'cli/d.ts':
        "import { fromPg } from '../postgres/from-pg.js';\nimport { claim } from '../postgres/postgres-claim.js';\n",
      'storage/workflow-storage.ts':
        "import type { WorkflowStore } from './workflow-store.js';\nexport const f = (store: WorkflowStore) => store.write();\n",
    });
    expect(storeAccess(files, STORE_RULES)).toEqual([
      'client/a.ts imports memory/in-memory-workflow.store.ts',
      'engine/b.ts imports WorkflowStore from storage/workflow-store.ts',
      'worker/c.ts calls options.store.claim()',
      'cli/d.ts imports postgres/postgres-claim.ts',
    ]);
  });
});
