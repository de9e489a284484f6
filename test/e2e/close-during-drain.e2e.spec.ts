// app.close() while worker.drain() has a claim on its way to the store, on the real servers, with
// the application's pool ended in its own onApplicationShutdown (docs/postgres.md): the shutdown
// waits for that claim and hands back what it leased before the hook ends the pool. Before, it
// did not wait: on PostgreSQL the claim, sent as the pool ended, never answered (pg drops a query
// that waits for a connection when end() is called), so drain() never settled; on MariaDB drain()
// rejected with "Can't add new command when connection is in closed state".
import { Injectable, Logger, Module, type OnApplicationShutdown } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { Workflow, WorkflowClient, WorkflowsModule, WorkflowWorker, type WorkflowContext } from '../../src/index.js';
import {
  freshSchema,
  openSqlTarget,
  requireServer,
  SERVER,
  type SqlKind,
  type SqlTarget,
} from '../support/sql-target.js';

const ran: string[] = [];

@Workflow('close.drain')
class Flow {
  async run(ctx: WorkflowContext) {
    await ctx.step('one', () => void ran.push(ctx.id));
  }
}

for (const kind of ['postgres', 'mysql'] as SqlKind[]) {
  const available = await requireServer(kind, 'app.close() during drain()');
  describe.skipIf(!available)(`app.close() while drain() claims, on ${SERVER[kind]}`, () => {
    const schema = freshSchema(kind, 'closedrain');
    let admin: SqlTarget;
    beforeAll(async () => {
      admin = openSqlTarget(kind, schema);
      await admin.store.init();
    });
    afterAll(async () => {
      vi.restoreAllMocks();
      await admin?.close({ drop: true });
    });

    it('waits for the claim, hands back what it leased, then lets the pool end; drain() resolves', async () => {
      const logged: string[] = [];
      vi.spyOn(Logger.prototype, 'error').mockImplementation((message: unknown) => void logged.push(String(message)));
      const target = openSqlTarget(kind, schema);
      @Injectable()
      class Database implements OnApplicationShutdown {
        async onApplicationShutdown() {
          await target.close();
        }
      }
      @Module({ providers: [Database], exports: [Database] })
      class DatabaseModule {}
      const module = await Test.createTestingModule({
        imports: [DatabaseModule, WorkflowsModule.forRoot({ store: target.store, worker: false })],
        providers: [Flow],
      }).compile();
      await module.init();
      const ids = ['d0', 'd1', 'd2'];
      for (const id of ids) await module.get(WorkflowClient).start(Flow, null, { id });

      // The close begins just as drain()'s claim is sent.
      let closing: Promise<void> | undefined;
      const claim = target.store.claim.bind(target.store);
      target.store.claim = (request) => {
        closing ??= module.close();
        return claim(request);
      };
      const drained = module.get(WorkflowWorker).drain();
      const settled = drained.then(
        (n) => ({ resolved: n }),
        (error: unknown) => ({ rejected: String(error) }),
      );
      await vi.waitFor(() => expect(closing).toBeDefined());
      await closing;
      const outcome = await Promise.race([
        settled,
        new Promise((resolve) => setTimeout(() => resolve('drain() never settled'), 5_000)),
      ]);
      expect(outcome).toEqual({ resolved: 3 });
      // Leased by the claim, handed back by the shutdown (no step ran): due now, for the next process.
      for (const id of ids) {
        const stored = await admin.store.get(id, { journal: true });
        expect(stored).toMatchObject({ status: 'running', leaseToken: null, leaseUntil: null, journal: [] });
      }
      expect(ran).toEqual([]);
      expect(logged).toEqual([]);
    });
  });
}
