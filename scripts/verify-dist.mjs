#!/usr/bin/env node
// Checks the built package in dist/ (run after `npm run build`):
//  1. every file named by package.json `exports` and `bin` exists; the bin has a shebang and is executable;
//  2. each entry loads both as ESM (import) and CJS (require);
//  3. decorator metadata survived the build: `WorkflowClient` has `design:paramtypes` (ESM and CJS);
//  4. `./testing` exports `workflowStoreContract` and `ManualWorkflowClock`;
//  5. entries share one copy of each class: a name exported by two entries is the same object;
//  6. the root entry (JS and types, with every chunk it reaches) never references `pg`, `mysql2`, `better-sqlite3` or `node:sqlite`;
//  7. nor any of the dashboard, which `./dashboard` exports.
// Reports every failure, then exits 1 if there was any.
import 'reflect-metadata';
import { accessSync, constants, existsSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const require = createRequire(join(root, 'package.json'));
const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8'));
const rel = (file) => relative(root, file);

const failures = [];
let checks = 0;
const fail = (message) => failures.push(message);
const ok = (message) => {
  checks += 1;
  console.log(`  ok  ${message}`);
};
const check = (condition, message, detail = '') => {
  if (condition) ok(message);
  else fail(detail ? `${message}: ${detail}` : message);
  return condition;
};

if (!existsSync(join(root, 'dist'))) {
  console.error('verify-dist: dist/ does not exist; run `npm run build` first.');
  process.exit(1);
}

// 1. Files named by exports and bin.
console.log('files:');
const exportTargets = [];
const collect = (value, path) => {
  if (typeof value === 'string') exportTargets.push({ path, file: value });
  else if (value && typeof value === 'object') for (const [k, v] of Object.entries(value)) collect(v, `${path}.${k}`);
};
for (const [subpath, value] of Object.entries(pkg.exports ?? {})) collect(value, `exports["${subpath}"]`);
for (const { path, file } of exportTargets) check(existsSync(join(root, file)), `${path} → ${file} exists`);
for (const [name, file] of Object.entries(pkg.bin ?? {})) {
  const abs = join(root, file);
  if (!check(existsSync(abs), `bin ${name} → ${file} exists`)) continue;
  check(readFileSync(abs, 'utf8').startsWith('#!/usr/bin/env node'), `bin ${name} starts with a shebang`);
  let executable = true;
  try {
    accessSync(abs, constants.X_OK);
  } catch {
    executable = false;
  }
  check(executable, `bin ${name} is executable`);
}

// 2. Load every entry as ESM and as CJS.
console.log('loading:');
const entries = {
  '.': 'index',
  './postgres': 'postgres/index',
  './mysql': 'mysql/index',
  './sqlite': 'sqlite/index',
  './testing': 'testing/index',
  './dashboard': 'dashboard/index',
  './health': 'health/index',
};
const loaded = { esm: {}, cjs: {} };
for (const [subpath, base] of Object.entries(entries)) {
  const esmFile = join(root, 'dist', `${base}.js`);
  const cjsFile = join(root, 'dist', `${base}.cjs`);
  try {
    loaded.esm[subpath] = await import(pathToFileURL(esmFile).href);
    ok(`import ${rel(esmFile)}`);
  } catch (error) {
    fail(`import ${rel(esmFile)} threw: ${error?.stack ?? error}`);
  }
  try {
    loaded.cjs[subpath] = require(cjsFile);
    ok(`require ${rel(cjsFile)}`);
  } catch (error) {
    fail(`require ${rel(cjsFile)} threw: ${error?.stack ?? error}`);
  }
}

// 3. + 4. Metadata and the testing entry's exports.
console.log('exports and metadata:');
for (const format of ['esm', 'cjs']) {
  const rootMod = loaded[format]['.'];
  if (rootMod) {
    const client = rootMod.WorkflowClient;
    if (check(typeof client === 'function', `${format}: root exports WorkflowClient`)) {
      const types = Reflect.getMetadata('design:paramtypes', client);
      const names = Array.isArray(types) ? types.map((t) => (typeof t === 'function' ? t.name : String(t))) : types;
      check(
        Array.isArray(types) && types.length > 0,
        `${format}: WorkflowClient has design:paramtypes`,
        `got ${JSON.stringify(names)} (was the build compiled by swc with decorator metadata? is @swc/core installed?)`,
      );
      if (Array.isArray(types) && types.length > 0) {
        // Parameters with @Inject(TOKEN) are resolved by token: their design type may be Object.
        const injected = new Set((Reflect.getMetadata('self:paramtypes', client) ?? []).map((p) => p.index));
        check(
          types.every((t, index) => injected.has(index) || (typeof t === 'function' && t !== Object)),
          `${format}: WorkflowClient's paramtypes are all concrete classes/tokens (${names.join(', ')})`,
          `got ${JSON.stringify(names)}: an undefined or Object entry means a type-only import, an interface, or an import cycle; use @Inject(TOKEN) there`,
        );
      }
    }
  }
  const testing = loaded[format]['./testing'];
  if (testing) {
    check(typeof testing.workflowStoreContract === 'function', `${format}: ./testing exports workflowStoreContract()`);
    check(typeof testing.ManualWorkflowClock === 'function', `${format}: ./testing exports ManualWorkflowClock`);
  }
}

// 5. One copy of each class across entries.
console.log('shared identity:');
for (const format of ['esm', 'cjs']) {
  const mods = Object.entries(loaded[format]);
  let shared = 0;
  for (let i = 0; i < mods.length; i += 1) {
    for (let j = i + 1; j < mods.length; j += 1) {
      const [aName, a] = mods[i];
      const [bName, b] = mods[j];
      for (const key of Object.keys(a)) {
        if (key === 'default' || key === '__esModule' || !(key in b)) continue;
        shared += 1;
        if (a[key] !== b[key])
          fail(
            `${format}: "${key}" exported by both "${aName}" and "${bName}" is two different objects (is tsup's splitting on?)`,
          );
      }
    }
  }
  ok(`${format}: ${shared} name(s) exported by more than one entry, checked for identity`);
}
// A subclass in a subpath entry must extend the root's class, not a copy (checked via prototype chains).
for (const format of ['esm', 'cjs']) {
  const rootMod = loaded[format]['.'];
  if (!rootMod) continue;
  const rootClasses = new Set(Object.values(rootMod).filter((v) => typeof v === 'function'));
  const rootNames = new Map([...rootClasses].map((c) => [c.name, c]));
  for (const [subpath, mod] of Object.entries(loaded[format])) {
    if (subpath === '.') continue;
    for (const [key, value] of Object.entries(mod)) {
      if (typeof value !== 'function' || !value.prototype) continue;
      for (let p = Object.getPrototypeOf(value); p && p !== Function.prototype; p = Object.getPrototypeOf(p)) {
        const sameName = rootNames.get(p.name);
        if (sameName && sameName !== p) {
          fail(`${format}: ${subpath} ${key} extends a copy of root's ${p.name}, not the root's class`);
        }
      }
    }
  }
}

// 6. The root entry never reaches a driver.
console.log('no drivers from the root entry:');
const DRIVER =
  /(?:\bfrom\s*|\bimport\s*\(\s*|\brequire\s*\(\s*|\bimport\s+)["'](?:pg|pg-[\w.-]+|mysql2|better-sqlite3|node:sqlite)(?:\/[^"']*)?["']/g;
const LOCAL = /(?:\bfrom\s*|\bimport\s*\(\s*|\brequire\s*\(\s*|\bimport\s+)["'](\.{1,2}\/[^"']+)["']/g;
function reachable(start) {
  const seen = new Set();
  const stack = [start];
  while (stack.length > 0) {
    const file = stack.pop();
    if (seen.has(file)) continue;
    seen.add(file);
    if (!existsSync(file)) {
      fail(`${rel(file)} is imported but missing`);
      continue;
    }
    const code = readFileSync(file, 'utf8');
    for (const match of code.matchAll(LOCAL)) {
      let target = resolve(dirname(file), match[1]);
      // Declaration files name their siblings as .js/.cjs; follow the matching .d.ts/.d.cts.
      if (/\.d\.c?ts$/.test(file)) target = target.replace(/\.js$/, '.d.ts').replace(/\.cjs$/, '.d.cts');
      stack.push(target);
    }
  }
  return [...seen].filter((f) => existsSync(f));
}
for (const start of ['index.js', 'index.cjs', 'index.d.ts', 'index.d.cts']) {
  const file = join(root, 'dist', start);
  if (!existsSync(file)) continue;
  const files = reachable(file);
  const offenders = [];
  for (const f of files) {
    const hits = [...readFileSync(f, 'utf8').matchAll(DRIVER)].map((m) => m[0]);
    if (hits.length > 0) offenders.push(`${rel(f)} (${[...new Set(hits)].join(', ')})`);
  }
  check(
    offenders.length === 0,
    `dist/${start} and the ${files.length - 1} file(s) it reaches reference no pg/mysql2/better-sqlite3/node:sqlite`,
    `found in ${offenders.join('; ')}`,
  );
}

// 6b. @opentelemetry/api (an optional peer) is loaded lazily, inside a try, never at import time.
console.log('telemetry loaded lazily:');
for (const start of ['index.js', 'index.cjs']) {
  const file = join(root, 'dist', start);
  if (!existsSync(file)) continue;
  const eager = [];
  for (const f of reachable(file)) {
    for (const line of readFileSync(f, 'utf8').split('\n')) {
      if (!line.includes('@opentelemetry/')) continue;
      const lazy =
        /import\("@opentelemetry\/api"\)|Promise\.resolve\(\)\.then\(\(\) => [\w$]*\(?require\("@opentelemetry\/api"\)/.test(
          line,
        );
      if (!lazy && /\bfrom\s*["']@opentelemetry|\bimport\s*["']@opentelemetry|\brequire\(["']@opentelemetry/.test(line))
        eager.push(`${rel(f)}: ${line.trim()}`);
    }
  }
  check(eager.length === 0, `dist/${start} and what it reaches load @opentelemetry/* only lazily`, eager.join('; '));
}

// 7. The root entry loads none of the dashboard (its own entry, ./dashboard).
console.log('no dashboard from the root entry:');
for (const start of ['index.js', 'index.cjs', 'index.d.ts', 'index.d.cts']) {
  const file = join(root, 'dist', start);
  if (!existsSync(file)) continue;
  const files = reachable(file);
  const offenders = files
    .filter((f) => /WorkflowsDashboardModule|DashboardService/.test(readFileSync(f, 'utf8')))
    .map(rel);
  check(
    offenders.length === 0,
    `dist/${start} and what it reaches hold no dashboard code`,
    `found in ${offenders.join('; ')}`,
  );
}
for (const format of ['esm', 'cjs']) {
  const dashboard = loaded[format]['./dashboard'];
  if (dashboard)
    check(
      typeof dashboard.WorkflowsDashboardModule === 'function',
      `${format}: ./dashboard exports WorkflowsDashboardModule`,
    );
  const health = loaded[format]['./health'];
  if (health)
    check(
      typeof health.WorkflowsHealthIndicator === 'function',
      `${format}: ./health exports WorkflowsHealthIndicator`,
    );
}
// 8. Only ./health loads @nestjs/terminus (an optional peer): the root entry reaches none of it.
for (const start of ['index.js', 'index.cjs', 'index.d.ts', 'index.d.cts']) {
  const file = join(root, 'dist', start);
  if (!existsSync(file)) continue;
  const offenders = reachable(file)
    .filter((f) => /@nestjs\/terminus/.test(readFileSync(f, 'utf8')))
    .map(rel);
  check(
    offenders.length === 0,
    `dist/${start} and what it reaches never load @nestjs/terminus`,
    `found in ${offenders.join('; ')}`,
  );
}

if (failures.length > 0) {
  console.error(`\nverify-dist: ${failures.length} problem(s):`);
  for (const f of failures) console.error(`  FAIL ${f}`);
  process.exit(1);
}
console.log(`\nverify-dist: all ${checks} checks passed.`);
