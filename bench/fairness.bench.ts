// W6, fairness, at the store: FAIR_BIG (100000) instances due under concurrency key `big`, then one
// under `small`; a saturated worker's claims of 10 (each claimed instance is then ended by one
// UPDATE, as a finished execution would leave it), back to back. Reported per store and build:
// the time from the small instance's create to the claim that takes it, beside the same on an
// idle table (the small one alone), and the big key's throughput (instances claimed per second
// over FAIR_CLAIMS (200) claims) with the small one waiting. Builds: this checkout and, with a
// checkout's directory as argument, that one, in FAIR_ROUNDS (3) interleaved rounds on fresh data
// each. The claim is the store's `claim()` (a store of each build on its own tables, migrated by it).
// Run: `node --import ./scripts/register-ts.mjs bench/fairness.bench.ts [<checkout>]`
// (PostgreSQL and MariaDB as the tests reach them; FAIR_STORES=postgres,mysql narrows).
import { randomUUID } from 'node:crypto';
import { resolve } from 'node:path';
import { createMysqlPool, dropTables } from '../test/support/mysql.js';
import { createPool } from '../test/support/postgres.js';
import type { WorkflowStore } from '../src/storage/workflow-store.js';

const BIG = Number(process.env.FAIR_BIG ?? 100_000);
const CLAIMS = Number(process.env.FAIR_CLAIMS ?? 200);
const ROUNDS = Number(process.env.FAIR_ROUNDS ?? 3);
const STORES = (process.env.FAIR_STORES ?? 'postgres,mysql').split(',');
const LIMIT = 10;
const WORKFLOW = 'bench.fair';
const compare = process.argv[2];
// FAIR_KEYS=100: the claim's cost instead: the FAIR_BIG due instances spread over that many keys, and
// each claim's leases undone after it (outside the timing), so every claim finds the same work.
const KEYS = Number(process.env.FAIR_KEYS ?? 0);

interface Build {
  name: string;
  root: string;
}
const builds: Build[] = [{ name: 'this checkout', root: resolve('.') }];
if (compare) builds.unshift({ name: `compared (${compare})`, root: resolve(compare) });

function say(message: string): void {
  process.stderr.write(`[bench:fairness ${new Date().toISOString().slice(11, 19)}] ${message}\n`);
}
const median = (list: number[]) => [...list].sort((a, b) => a - b)[Math.floor(list.length / 2)]!;

/** A store of `build` on fresh tables, with raw SQL on them: bulk insert and end of what a claim took. */
async function open(kind: string, build: Build) {
  const tag = `fair_${Date.now().toString(36)}_${Math.floor(Math.random() * 1e6)}`;
  if (kind === 'postgres') {
    const pg = (await import(
      resolve(build.root, 'src/postgres/index.ts')
    )) as typeof import('../src/postgres/index.js');
    const pool = createPool({ max: 3 });
    const store = new pg.PostgresWorkflowStore({ executor: pg.fromPg(pool), schema: tag });
    await store.init();
    const t = `"${tag}".instances`;
    return {
      store: store as WorkflowStore,
      bulk: (now: number, n: number) =>
        pool.query(
          `INSERT INTO ${t} (id, workflow, version, status, signal_cursor, priority, wake_at, created_at, updated_at, concurrency_key)
SELECT 'big-' || g, $3, 1, 'pending', 0, 0, $1::bigint - $2::integer + g, $1::bigint - $2::integer + g, $1::bigint,
  CASE WHEN $4::integer > 0 THEN 'k' || (g % $4::integer) ELSE 'big' END FROM generate_series(1, $2::integer) g`,
          [now, n, WORKFLOW, KEYS],
        ),
      analyze: () => pool.query(`VACUUM ANALYZE ${t}`),
      end: (token: string) =>
        pool.query(
          KEYS > 0
            ? `UPDATE ${t} SET status = 'pending', runs = 0, lease_token = NULL, lease_owner = NULL, lease_until = NULL WHERE lease_token = $1`
            : `UPDATE ${t} SET status = 'completed', wake_at = NULL, lease_token = NULL, lease_until = NULL WHERE lease_token = $1`,
          [token],
        ),
      async close() {
        await store.close();
        await pool.query(`DROP SCHEMA "${tag}" CASCADE`);
        await pool.end();
      },
    };
  }
  const my = (await import(resolve(build.root, 'src/mysql/index.ts'))) as typeof import('../src/mysql/index.js');
  const pool = createMysqlPool({ connectionLimit: 3 });
  const store = new my.MySqlWorkflowStore({ executor: my.fromMysql2(pool), schema: tag });
  await store.init();
  const t = `\`${tag}_instances\``;
  return {
    store: store as WorkflowStore,
    async bulk(now: number, n: number) {
      for (let from = 1; from <= n; from += 10_000) {
        const rows = Array.from({ length: Math.min(10_000, n - from + 1) }, (_, i) => from + i);
        await pool.query(
          `INSERT INTO ${t} (id, workflow, version, status, signal_cursor, priority, wake_at, created_at, updated_at, concurrency_key, wait_topics) VALUES ${rows
            .map(() => `(?, ?, 1, 'pending', 0, 0, ?, ?, ?, ?, '[]')`)
            .join(', ')}`,
          rows.flatMap((g) => [`big-${g}`, WORKFLOW, now - n + g, now - n + g, now, KEYS > 0 ? `k${g % KEYS}` : 'big']),
        );
      }
    },
    analyze: () => pool.query(`ANALYZE TABLE ${t}`),
    end: (token: string) =>
      pool.query(
        KEYS > 0
          ? `UPDATE ${t} SET status = 'pending', runs = 0, lease_token = NULL, lease_owner = NULL, lease_until = NULL WHERE lease_token = ?`
          : `UPDATE ${t} SET status = 'completed', wake_at = NULL, lease_token = NULL, lease_until = NULL WHERE lease_token = ?`,
        [token],
      ),
    async close() {
      await store.close();
      await dropTables(pool, tag);
      await pool.end();
    },
  };
}

/** Claims of 10 until `small` is taken: the ms from its create, and how many claims it took. */
async function run(kind: string, build: Build, big: number) {
  const target = await open(kind, build);
  try {
    const now = Date.now();
    if (big > 0) {
      await target.bulk(now, big);
      await target.analyze();
    }
    const claim = async () => {
      const token = randomUUID();
      const claimed = await target.store.claim({
        owner: 'bench',
        token,
        now: Date.now(),
        leaseUntil: Date.now() + 60_000,
        limit: LIMIT,
        workflows: [{ name: WORKFLOW, version: 1 }],
      });
      await target.end(token);
      return claimed.instances;
    };
    for (let i = 0; i < 5; i++) if (big > 0) await claim(); // warm-up
    if (KEYS > 0) {
      const times: number[] = [];
      for (let i = 0; i < CLAIMS; i++) {
        const token = randomUUID();
        const at = performance.now();
        const claimed = await target.store.claim({
          owner: 'bench',
          token,
          now: Date.now(),
          leaseUntil: Date.now() + 60_000,
          limit: LIMIT,
          workflows: [{ name: WORKFLOW, version: 1 }],
        });
        times.push(performance.now() - at);
        if (claimed.instances.length !== LIMIT) throw new Error(`claimed ${claimed.instances.length}`);
        await target.end(token);
      }
      return { smallMs: median(times), bigPerSecond: 0 };
    }
    const created = performance.now();
    await target.store.create({
      id: 'small',
      workflow: WORKFLOW,
      version: 1,
      input: null,
      deadline: null,
      now: Date.now(),
      concurrencyKey: 'small',
    });
    let claims = 0;
    let bigTaken = 0;
    let smallAfter = NaN;
    let seconds = 0;
    const started = performance.now();
    // The big key's throughput over the first FAIR_CLAIMS claims; then on until the small one is taken.
    while (claims < (big > 0 ? CLAIMS : 0) || Number.isNaN(smallAfter)) {
      const instances = await claim();
      claims++;
      if (Number.isNaN(smallAfter) && instances.some((instance) => instance.id === 'small'))
        smallAfter = performance.now() - created;
      if (claims <= CLAIMS) {
        bigTaken += instances.filter((instance) => instance.id !== 'small').length;
        if (claims === CLAIMS) seconds = (performance.now() - started) / 1000;
      }
      if (claims > big / LIMIT + 10) throw new Error('the small instance was never claimed');
    }
    return { smallMs: smallAfter, bigPerSecond: big > 0 ? bigTaken / seconds : 0 };
  } finally {
    await target.close();
  }
}

const results: Record<string, unknown>[] = [];
for (const kind of STORES) {
  const figures = builds.map(() => ({ idle: [] as number[], loaded: [] as number[], throughput: [] as number[] }));
  for (let round = 0; round < ROUNDS; round++) {
    for (const [i, build] of builds.entries()) {
      const idle = KEYS > 0 ? { smallMs: NaN } : await run(kind, build, 0);
      const loaded = await run(kind, build, BIG);
      figures[i]!.idle.push(idle.smallMs);
      figures[i]!.loaded.push(loaded.smallMs);
      figures[i]!.throughput.push(loaded.bigPerSecond);
      say(
        `${kind}, ${build.name}, round ${round + 1}: small idle ${idle.smallMs.toFixed(1)} ms, behind ${BIG} big ${loaded.smallMs.toFixed(1)} ms, big ${loaded.bigPerSecond.toFixed(0)}/s`,
      );
    }
  }
  for (const [i, build] of builds.entries()) {
    const f = figures[i]!;
    results.push({
      store: kind,
      build: build.name,
      small_idle_ms: +median(f.idle).toFixed(2),
      small_behind_big_ms: +median(f.loaded).toFixed(2),
      ratio_to_idle: +(median(f.loaded) / median(f.idle)).toFixed(2),
      big_per_second: +median(f.throughput).toFixed(0),
    });
  }
}
console.log(JSON.stringify({ big: BIG, limit: LIMIT, claims: CLAIMS, rounds: ROUNDS, results }, null, 2));
