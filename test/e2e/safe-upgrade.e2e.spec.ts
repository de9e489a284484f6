// Safe upgrades across two applications on one store, as a deploy meets old instances: the old
// code starts instances and leaves them suspended; replayStored() judges the new code before it
// runs anything (nothing written); the new code with a patch then resumes them, old instances on
// the old branch and new ones on the new. Exported histories replay against changed code.
// On PostgreSQL, MariaDB and SQLite (the in-memory store can't be shared by two applications).
import 'reflect-metadata';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Injectable } from '@nestjs/common';
import { Test, type TestingModule } from '@nestjs/testing';
import Database from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  Workflow,
  WorkflowClient,
  WorkflowsModule,
  WorkflowWorker,
  type WorkflowContext,
  type WorkflowHistory,
} from '../../src/index.js';
import { main } from '../../src/cli/index.js';
import { SqliteWorkflowStore } from '../../src/sqlite/index.js';
import type { WorkflowStore } from '../../src/storage/workflow-store.js';
import { ManualWorkflowClock, replayHistory, replayStored } from '../../src/testing/index.js';
import { freshSchema, openSqlTarget, requireServer, SERVER, SQL_KINDS, type SqlTarget } from '../support/sql-target.js';

type Code = 'old' | 'unpatched' | 'patched' | 'removed' | 'inserted' | 'swapped';

/** Which code an application runs (each application has its own). */
@Injectable()
class Release {
  code: Code = 'old';
  ran: string[] = [];
}

@Workflow('upgrade.order')
class Order {
  constructor(private readonly release: Release) {}

  async run(ctx: WorkflowContext): Promise<string> {
    const step = (name: string) => ctx.step(name, () => void this.release.ran.push(`${ctx.id}:${name}`));
    const { code } = this.release;
    if (code === 'swapped') await step('charge-dollars');
    await step('reserve');
    if (code === 'inserted') await step('check-fraud');
    await ctx.sleep('settle', '1m');
    // "removed" charges nothing; "patched" keeps the old charge for instances already past this point.
    const charged = code === 'unpatched' || (code === 'patched' && ctx.patched('cents')) ? 'cents' : 'dollars';
    if (code !== 'removed' && code !== 'swapped') await step(`charge-${charged}`);
    await ctx.sleep('cool-off', '1m');
    await step('ship');
    return charged;
  }
}

interface Store {
  /** A store object of its own on the shared database, as another process would open. */
  open(): WorkflowStore;
  /** Every row of the store's tables, as text. */
  dump(): Promise<string>;
  /** The CLI's options naming the store. */
  cli: string[];
  close(): Promise<void>;
}

async function sqlStore(kind: (typeof SQL_KINDS)[number]): Promise<Store> {
  const target: SqlTarget = openSqlTarget(kind, freshSchema(kind, 'upgrade'));
  await target.store.init();
  return {
    open: () => target.storeWith({}),
    dump: () => target.dump(),
    cli: [`--${kind}`, target.url, '--schema', target.schema],
    close: () => target.close({ drop: true }),
  };
}

function sqliteStore(): Store {
  const dir = mkdtempSync(join(tmpdir(), 'nest-workflows-upgrade-'));
  const path = join(dir, 'workflows.db');
  return {
    open: () => new SqliteWorkflowStore({ path }),
    cli: ['--sqlite', path],
    async dump() {
      const db = new Database(path, { readonly: true });
      try {
        const tables = db.prepare("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name").all() as Array<{
          name: string;
        }>;
        return tables
          .map(({ name }) => `${name}:${JSON.stringify(db.prepare(`SELECT * FROM "${name}"`).all())}`)
          .join('\n');
      } finally {
        db.close();
      }
    },
    close: async () => rmSync(dir, { recursive: true, force: true }),
  };
}

const kinds = [
  ...(await Promise.all(
    SQL_KINDS.map(async (kind) => ({
      name: SERVER[kind],
      available: await requireServer(kind, 'safe upgrade e2e'),
      make: () => sqlStore(kind),
    })),
  )),
  { name: 'SQLite', available: true, make: async () => sqliteStore() },
];

for (const kind of kinds) {
  describe.skipIf(!kind.available)(`safe upgrades across two applications on ${kind.name}`, () => {
    let store: Store;
    const clock = new ManualWorkflowClock(new Date('2026-03-01T00:00:00Z'));
    beforeAll(async () => {
      store = await kind.make();
    });
    afterAll(async () => store?.close());

    async function application(
      code: Code,
    ): Promise<{ module: TestingModule; client: WorkflowClient; release: Release }> {
      const module = await Test.createTestingModule({
        imports: [WorkflowsModule.forRoot({ store: store.open(), clock, worker: false })],
        providers: [Release, Order],
      }).compile();
      await module.init();
      const release = module.get(Release);
      release.code = code;
      return { module, client: module.get(WorkflowClient), release };
    }

    async function drain(module: TestingModule) {
      await module.get(WorkflowWorker).drain();
    }

    let history: WorkflowHistory;

    it('catches the unpatched change before the new code runs anything, and lets the patched one resume every instance', async () => {
      const old = await application('old');
      for (const id of ['past-1', 'past-2']) await old.client.start(Order, null, { id });
      await drain(old.module);
      clock.advance('1m');
      await drain(old.module); // past "charge", sleeping in "cool-off"
      await old.client.start(Order, null, { id: 'before' });
      await drain(old.module); // sleeping in "settle", before the change
      history = await old.client.exportHistory('past-1');
      await old.module.close();

      const unpatched = await application('unpatched');
      const dump = await store.dump();
      const reports = await replayStored(unpatched.module);
      expect(reports.map((report) => [report.id, report.result])).toEqual([
        ['past-1', 'diverged'],
        ['past-2', 'diverged'],
        ['before', 'ok'],
      ]);
      expect(reports[0]).toMatchObject({ reason: 'replaced', entry: 'charge-dollars', reached: 'charge-cents' });
      expect(unpatched.release.ran).toEqual([]);
      expect(await store.dump()).toBe(dump);
      await unpatched.module.close();

      const patched = await application('patched');
      expect((await replayStored(patched.module)).every((report) => report.result === 'ok')).toBe(true);
      await patched.client.start(Order, null, { id: 'new' });
      for (let round = 0; round < 4; round++) {
        await drain(patched.module);
        clock.advance('1m');
      }
      await drain(patched.module);
      const results = Object.fromEntries(
        await Promise.all(
          ['past-1', 'past-2', 'before', 'new'].map(async (id) => [id, await patched.client.handle(id).result()]),
        ),
      );
      expect(results).toEqual({ 'past-1': 'dollars', 'past-2': 'dollars', before: 'cents', new: 'cents' });
      expect(patched.release.ran.filter((name) => name.includes('charge')).sort()).toEqual([
        'before:charge-cents',
        'new:charge-cents',
      ]);
      const statuses = await patched.client.list({ workflow: 'upgrade.order' });
      expect(statuses.map((instance) => instance.status)).toEqual(['completed', 'completed', 'completed', 'completed']);
      await patched.module.close();
    });

    it('replays the exported history: ok on the same code, and the first differing entry for each change', async () => {
      const app = await application('old');
      const parsed = JSON.parse(JSON.stringify(history)) as WorkflowHistory;
      expect(await replayHistory(app.module, parsed)).toMatchObject({ result: 'ok', end: 'suspended' });
      const expected: Array<[Code, string, string, string | null]> = [
        ['unpatched', 'replaced', 'charge-dollars', 'charge-cents'],
        ['removed', 'not-reached', 'charge-dollars', null],
        ['inserted', 'replaced', 'settle', 'check-fraud'],
        ['swapped', 'order-changed', 'reserve', 'reserve'],
        ['patched', 'ok', '', null],
      ];
      for (const [code, reason, entry, reached] of expected) {
        app.release.code = code;
        const report = await replayHistory(app.module, parsed);
        if (reason === 'ok') expect(report, code).toMatchObject({ result: 'ok' });
        else expect(report, code).toMatchObject({ result: 'diverged', reason, entry, reached });
      }
      expect(app.release.ran).toEqual([]);
      await app.module.close();
    });

    it('exports the same history with nest-workflows export-history, one instance or a filter', async () => {
      const out: string[] = [];
      const err: string[] = [];
      const io = { out: (line: string) => out.push(line), err: (line: string) => err.push(line) };
      const app = await application('old');
      const fresh = await app.client.exportHistory('past-2');
      await app.module.close();
      expect(await main(['export-history', 'past-2', ...store.cli], io), err.join('\n')).toBe(0);
      const printed = JSON.parse(out.join('\n')) as WorkflowHistory;
      expect({ ...printed, exportedAt: null }).toEqual({ ...fresh, exportedAt: null });

      const dir = mkdtempSync(join(tmpdir(), 'nest-workflows-histories-'));
      try {
        out.length = 0;
        const args = [
          'export-history',
          ...store.cli,
          '--out',
          dir,
          '--workflow',
          'upgrade.order',
          '--status',
          'completed',
        ];
        expect(await main(args, io), err.join('\n')).toBe(0);
        expect(out).toEqual([`Exported 4 histories to ${dir}.`]);
        expect(readdirSync(dir).sort()).toEqual(['before.json', 'new.json', 'past-1.json', 'past-2.json']);
        const written = JSON.parse(readFileSync(join(dir, 'past-2.json'), 'utf8')) as WorkflowHistory;
        expect(written.journal).toEqual(fresh.journal);
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
      expect(await main(['export-history', 'nope', ...store.cli], io)).toBe(1);
      expect(err.at(-1)).toMatch(/No workflow instance has the id "nope"/);
      expect(await main(['export-history', 'past-2', '--status', 'completed', ...store.cli], io)).toBe(2);
    });
  });
}
