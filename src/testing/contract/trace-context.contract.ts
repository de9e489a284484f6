import { BASE_TIME as T, details, newInstance, testScope } from '../store-fixtures.js';
import type { ContractSuite } from './contract-suite.js';

/** `create` keeps the trace context its caller gives, and every read returns it as given. */
export function traceContextContract(suite: ContractSuite): void {
  const { describe, it, expect } = suite.test;
  describe('trace context', () => {
    it('create: stores traceContext as given (null by default); get, list and claim return it', async () => {
      const s = testScope();
      const traceContext = {
        traceparent: '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01',
        tracestate: 'vendor=a:1,other=b',
      };
      const { instance } = await suite.store.create(newInstance(s.id('a'), s.workflow, { traceContext }));
      expect(instance.traceContext).toEqual(traceContext);
      expect((await suite.store.create(newInstance(s.id('b'), s.workflow))).instance.traceContext).toBeNull();
      expect((await details(suite.store, s.id('a'))).traceContext).toEqual(traceContext);
      expect(
        (await suite.store.list({ workflow: s.workflow, limit: 10, offset: 0 })).map((i) => i.traceContext),
      ).toEqual([traceContext, null]);
      const claim = await suite.store.claim({
        owner: 'w',
        token: `${s.id('token')}`,
        now: T,
        leaseUntil: T + 30_000,
        limit: 10,
        workflows: [{ name: s.workflow, version: 1 }],
      });
      expect(claim.instances.find((i) => i.id === s.id('a'))?.traceContext).toEqual(traceContext);
    });
  });
}
