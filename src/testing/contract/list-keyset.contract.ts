import type { WorkflowInstance } from '../../storage/workflow-instance.js';
import type { WorkflowStore } from '../../storage/workflow-store.js';
import { BASE_TIME as T, details, newInstance, testScope } from '../store-fixtures.js';
import type { ContractSuite } from './contract-suite.js';

/** `list` beyond plain filters: newest first, keyset positions, id prefixes and created ranges. */
export function listKeysetContract(suite: ContractSuite): void {
  const { describe, it, expect } = suite.test;
  describe('list paging and ranges', () => {
    it('list: newest first with order desc; keyset pages with after, in either order, and ties on createdAt go by id', async () => {
      const s = testScope();
      for (const [name, at] of [
        ['x0', 3],
        ['x2', 2],
        ['x3', 1],
        ['x1', 2],
        ['x4', 4],
      ] as const) {
        await suite.store.create(newInstance(s.id(name), s.workflow, { now: T + at }));
      }
      const short = (list: WorkflowInstance[]) => list.map((i) => i.id.slice(s.prefix.length + 1));
      const page = async (order: 'asc' | 'desc', after?: string, limit = 2) => {
        const from = after === undefined ? undefined : await details(suite.store, s.id(after));
        const query = { workflow: s.workflow, order, limit, offset: 0 };
        return short(
          await suite.store.list(from ? { ...query, after: { createdAt: from.createdAt, id: from.id } } : query),
        );
      };
      expect(await page('desc', undefined, 100)).toEqual(['x4', 'x0', 'x2', 'x1', 'x3']);
      expect(await page('desc')).toEqual(['x4', 'x0']);
      expect(await page('desc', 'x0')).toEqual(['x2', 'x1']);
      expect(await page('desc', 'x1')).toEqual(['x3']);
      expect(await page('desc', 'x3')).toEqual([]);
      expect(await page('asc', 'x3')).toEqual(['x1', 'x2']);
      expect(await page('asc', 'x2')).toEqual(['x0', 'x4']);
      expect(await page('asc', 'x4')).toEqual([]);
      // A position needs no instance there: between x2 (T+2) and x0 (T+3).
      const between = { createdAt: T + 2, id: `${s.id('x2')}~` };
      expect(short(await suite.store.list({ workflow: s.workflow, after: between, limit: 10, offset: 0 }))).toEqual([
        'x0',
        'x4',
      ]);
      expect(
        short(await suite.store.list({ workflow: s.workflow, after: between, order: 'desc', limit: 10, offset: 0 })),
      ).toEqual(['x2', 'x1', 'x3']);
    });

    it('list: filters by id prefix (literally: % and _ are plain characters) and by a created range', async () => {
      const s = testScope();
      for (const [name, at] of [
        ['order-1', 1],
        ['order-2', 2],
        ['order-10', 3],
        ['orders', 4],
        ['or%der', 5],
        ['or_der', 6],
        ['ordes', 7],
      ] as const) {
        await suite.store.create(newInstance(s.id(name), s.workflow, { now: T + at }));
      }
      const ids = async (query: Partial<Parameters<WorkflowStore['list']>[0]>) =>
        (await suite.store.list({ workflow: s.workflow, limit: 100, offset: 0, ...query })).map((i) =>
          i.id.slice(s.prefix.length + 1),
        );
      expect(await ids({ idPrefix: s.id('order-1') })).toEqual(['order-1', 'order-10']);
      expect(await ids({ idPrefix: s.id('order') })).toEqual(['order-1', 'order-2', 'order-10', 'orders']);
      expect(await ids({ idPrefix: s.id('or%') })).toEqual(['or%der']);
      expect(await ids({ idPrefix: s.id('or_') })).toEqual(['or_der']);
      expect(await ids({ idPrefix: s.id('order-10') })).toEqual(['order-10']);
      expect(await ids({ idPrefix: s.id('order-100') })).toEqual([]);
      expect(await ids({ createdFrom: T + 2, createdBefore: T + 4 })).toEqual(['order-2', 'order-10']);
      expect(await ids({ createdFrom: T + 6 })).toEqual(['or_der', 'ordes']);
      expect(await ids({ createdBefore: T + 2 })).toEqual(['order-1']);
      expect(await ids({ idPrefix: s.id('order'), createdFrom: T + 2, order: 'desc', limit: 2 })).toEqual([
        'orders',
        'order-10',
      ]);
    });
  });
}
