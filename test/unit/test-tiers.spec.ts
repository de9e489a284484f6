import { readdirSync, readFileSync } from 'node:fs';
import { join, relative, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';
import { frameworkLeaks, parseSource, type SourceFile } from '../support/source-graph.js';

// The test tiers, read off the imports of test/: test/unit specifies the engine on plain objects,
// so no file there reaches @nestjs/* (directly or through a helper under test/), and one file,
// support/engine-app.ts, builds the engine's parts. Nest's own behaviour is tested in test/nest.

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const HARNESS = 'test/unit/support/engine-app.ts';

/** The engine's parts: built in the harness only, so a constructor that changes is adapted once. */
const ENGINE_PARTS = new Set([
  'WorkflowStorage',
  'WorkflowRegistry',
  'WorkflowEngine',
  'WorkflowRuntime',
  'WorkflowWakeUps',
  'WorkflowEvents',
  'WorkflowClient',
  'WorkflowSchedules',
  'WorkflowWorker',
  'WorkflowScheduler',
  'WorkflowSchedulerService',
  'ScheduleAdmin',
  'createWorkflowStorage',
]);

function walk(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const full = join(dir, entry.name);
    if (entry.isDirectory()) return walk(full);
    return entry.isFile() && entry.name.endsWith('.ts') ? [full] : [];
  });
}

/**
 * The files under test/ with their imports of other files under test/ only: what src/ imports is
 * the library's business (its Nest shell is tested in test/nest), not a test helper's.
 */
function testGraph(texts: ReadonlyMap<string, string>, known: ReadonlySet<string>): SourceFile[] {
  return [...texts].map(([path, text]) => {
    const file = parseSource(path, text, known);
    return { ...file, imports: file.imports.filter((target) => target.startsWith('test/')) };
  });
}

/** The engine's parts `text` builds: `new X(...)` and `createWorkflowStorage(...)`. */
function partsBuilt(path: string, text: string): string[] {
  const source = ts.createSourceFile(path, text, ts.ScriptTarget.Latest, true, ts.ScriptKind.TS);
  const built: string[] = [];
  const visit = (node: ts.Node): void => {
    if ((ts.isNewExpression(node) || ts.isCallExpression(node)) && ts.isIdentifier(node.expression)) {
      const name = node.expression.text;
      const isPart = ts.isNewExpression(node) ? name !== 'createWorkflowStorage' : name === 'createWorkflowStorage';
      if (isPart && ENGINE_PARTS.has(name)) built.push(name);
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  return built;
}

const toPosix = (full: string) => relative(ROOT, full).split(sep).join('/');
const paths = [...walk(join(ROOT, 'src')), ...walk(join(ROOT, 'test'))].map(toPosix);
const texts = new Map(
  paths.filter((path) => path.startsWith('test/')).map((path) => [path, readFileSync(join(ROOT, path), 'utf8')]),
);
const graph = testGraph(texts, new Set(paths));
const isUnit = (path: string) => path.startsWith('test/unit/');

describe('the test tiers', () => {
  it('keeps test/unit off Nest: no spec or helper there reaches @nestjs/* through test files', () => {
    expect(frameworkLeaks(graph, (path) => isUnit(path))).toEqual([]);
  });

  it('keeps WorkflowsModule out of test/unit', () => {
    const users = graph
      .filter((file) => isUnit(file.path))
      .filter((file) => [...file.names.values()].some((names) => names.includes('WorkflowsModule')))
      .map((file) => file.path);
    expect(users).toEqual([]);
  });

  it('builds the engine’s parts in test/unit/support/engine-app.ts only', () => {
    const elsewhere = [...texts]
      .filter(([path]) => isUnit(path) && path !== HARNESS)
      .flatMap(([path, text]) => partsBuilt(path, text).map((part) => `${path} builds ${part}`));
    expect(elsewhere).toEqual([]);
    expect(partsBuilt(HARNESS, texts.get(HARNESS)!)).toEqual(
      expect.arrayContaining(['WorkflowEngine', 'WorkflowClient']),
    );
  });
});

describe('the test tier checks, on a small tree', () => {
  const known = new Set([
    'src/index.ts',
    'test/unit/a.spec.ts',
    'test/unit/support/nest-app.ts',
    'test/unit/b.spec.ts',
  ]);
  const tree = (files: Record<string, string>) => testGraph(new Map(Object.entries(files)), known);

  it('finds a unit spec that reaches @nestjs through a helper', () => {
    const files = tree({
      'test/unit/a.spec.ts': "import { nestApp } from './support/nest-app.js';\n",
      'test/unit/support/nest-app.ts': "import { Test } from '@nestjs/testing';\nexport const nestApp = Test;\n",
    });
    expect(frameworkLeaks(files, isUnit)).toEqual([
      'test/unit/a.spec.ts -> test/unit/support/nest-app.ts (@nestjs/testing)',
      'test/unit/support/nest-app.ts (@nestjs/testing)',
    ]);
  });

  it('leaves what src/ imports to the architecture test', () => {
    const files = tree({ 'test/unit/b.spec.ts': "import { WorkflowClient } from '../../src/index.js';\n" });
    expect(frameworkLeaks(files, isUnit)).toEqual([]);
  });

  it('finds an engine part built outside the harness', () => {
    expect(
      partsBuilt(
        'test/unit/b.spec.ts',
        'const storage = new WorkflowStorage(store);\nconst other = createWorkflowStorage(store, {});\nnew Map();\n',
      ),
    ).toEqual(['WorkflowStorage', 'createWorkflowStorage']);
  });
});
