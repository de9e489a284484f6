// Bulk actions on a large store: pauseMany() and resumeMany() over 100,000 matching instances, then
// cancelMany() of them, then the same call again (nothing left to change), and with TERMINATE=1
// terminateMany() of them all, on PostgreSQL or MariaDB.
//
//   BENCH_STORE=postgres|mysql COUNT=100000 node --import ./scripts/register-ts.mjs bench/bulk.bench.ts
//
// The instances are created through the store (pending, of a workflow no worker runs), so the
// figures are the bulk actions' own: keyset pages of 1,000 read, each acted on in store pages of 500
// (`changeMany()`, one transaction each), on a pool of 10.
import { loadavg } from 'node:os';
import { createContractEngine } from '../src/testing/contract/contract-engine.js';
import { ManualWorkflowClock } from '../src/time/manual-workflow-clock.js';
import { BENCH_STORE, benchStore } from './fixtures/bench-store.js';

const COUNT = Number(process.env.COUNT ?? 100_000);
const schema = `bench_bulk_${process.pid}`;
const { store, end } = benchStore(schema, 10);
const workflow = 'bench.bulk';

async function timed<T>(label: string, fn: () => Promise<T>): Promise<T> {
  const started = performance.now();
  const result = await fn();
  const seconds = (performance.now() - started) / 1000;
  console.log(
    `${label}: ${seconds.toFixed(1)} s (${Math.round(COUNT / seconds)} instances/s) ${JSON.stringify(result)}`,
  );
  return result;
}

try {
  await store.init!();
  const now = Date.now();
  await timed(`create ${COUNT}`, async () => {
    for (let n = 0; n < COUNT; n += 1000) {
      await Promise.all(
        Array.from({ length: Math.min(1000, COUNT - n) }, (_, i) =>
          store.create({
            id: `b-${String(n + i).padStart(7, '0')}`,
            workflow,
            version: 1,
            input: { n: n + i },
            deadline: null,
            now,
          }),
        ),
      );
    }
    return COUNT;
  });
  const engine = createContractEngine(store, { workflows: [], clock: new ManualWorkflowClock(now + 1000) });
  try {
    console.log(
      `${BENCH_STORE}, ${new Date().toISOString()}, load ${loadavg()
        .map((l) => l.toFixed(1))
        .join(' ')}`,
    );
    await timed('pauseMany', () => engine.client.pauseMany({ workflow }, { reason: 'bench' }));
    await timed('resumeMany', () => engine.client.resumeMany({ workflow }));
    await timed('cancelMany', () => engine.client.cancelMany({ workflow }, { reason: 'bench' }));
    await timed('cancelMany again', () => engine.client.cancelMany({ workflow }, { reason: 'bench' }));
    if (process.env.TERMINATE === '1')
      await timed('terminateMany', () => engine.client.terminateMany({ workflow }, { reason: 'bench' }));
  } finally {
    await engine.close();
  }
} finally {
  await end({ drop: true });
}
