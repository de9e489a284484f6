#!/usr/bin/env node
// Runs vitest, then prints the plain closing line `N passed, N failed[, N skipped]` computed from
// vitest's JSON report. Exits non-zero when vitest failed (e.g. a suite that errors on import),
// when any test failed, or when no test ran. Extra CLI args are passed through to `vitest run`.
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const require = createRequire(import.meta.url);
const vitestBin = join(require.resolve('vitest/package.json'), '..', 'vitest.mjs');

const dir = mkdtempSync(join(tmpdir(), 'nest-workflows-vitest-'));
const outFile = join(dir, 'results.json');
const args = [
  vitestBin,
  'run',
  '--reporter=default',
  '--reporter=json',
  `--outputFile.json=${outFile}`,
  ...process.argv.slice(2),
];

const child = spawn(process.execPath, args, { stdio: 'inherit', env: process.env });
const forward = (signal) => child.kill(signal);
process.on('SIGINT', forward);
process.on('SIGTERM', forward);

const { code, signal } = await new Promise((resolve) => {
  child.on('exit', (code, signal) => resolve({ code, signal }));
  child.on('error', (error) => {
    console.error(`test: could not start vitest: ${error.message}`);
    resolve({ code: 1, signal: null });
  });
});

let report;
try {
  report = JSON.parse(readFileSync(outFile, 'utf8'));
} catch (error) {
  console.error(`test: could not read vitest's JSON report (${outFile}): ${error.message}`);
} finally {
  rmSync(dir, { recursive: true, force: true });
}

const passed = report?.numPassedTests ?? 0;
const skipped = (report?.numPendingTests ?? 0) + (report?.numTodoTests ?? 0);
// Suites that failed to load (import errors, syntax errors) or in a hook have a failed status but
// no failed test: count each as one failure so the closing line agrees with the exit code.
const failedSuites = report?.numFailedTestSuites ?? 0;
const brokenSuites = (report?.testResults ?? []).filter(
  (suite) => suite.status === 'failed' && !(suite.assertionResults ?? []).some((t) => t.status === 'failed'),
).length;
const failed = (report?.numFailedTests ?? 0) + brokenSuites;

const problems = [];
if (signal) problems.push(`vitest was killed by ${signal}`);
else if (code !== 0) problems.push(`vitest exited with code ${code}`);
if (!report) problems.push('no JSON report');
if (failed > 0) problems.push(`${failed} test(s) failed (a test file that failed to load counts as one)`);
if (failedSuites > 0) problems.push(`${failedSuites} test file(s) failed`);
if (report && passed + (report.numFailedTests ?? 0) === 0) problems.push('no test ran');

if (problems.length > 0) console.error(`\ntest: FAILED: ${problems.join('; ')}`);

// The closing line comes last, alone on its line.
console.log('');
console.log(`${passed} passed, ${failed} failed${skipped ? `, ${skipped} skipped` : ''}`);

if (problems.length > 0) process.exit(code && code !== 0 ? code : 1);
