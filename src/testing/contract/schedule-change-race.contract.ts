import { Workflow } from '../../decorators/workflow.decorator.js';
import type { WorkflowStore } from '../../storage/workflow-store.js';
import { ManualWorkflowClock } from '../../time/manual-workflow-clock.js';
import { range, runWorkflowName, scheduleSave, testScope, newInstance, BASE_TIME } from '../store-fixtures.js';
import { contractEngines, type ContractEngine } from './contract-engine.js';
import type { ContractSuite } from './contract-suite.js';

@Workflow(runWorkflowName('schedule-race.old'))
export class ScheduleRaceOld {
  async run(_ctx: unknown, input: unknown) {
    return input;
  }
}

@Workflow(runWorkflowName('schedule-race.new'))
export class ScheduleRaceNew {
  async run(_ctx: unknown, input: unknown) {
    return input;
  }
}

/** An hour after `BASE_TIME`, on the hour: the occurrence the tests race. */
const TICK = Math.ceil(BASE_TIME / 3_600_000) * 3_600_000 + 3_600_000;

/**
 * `store`, running `race` (once, when armed) right before the next `createOccurrence()` goes to the
 * store (`before`) or right after it returned (`after`): the change lands between a start's read
 * of the schedule and its insert, or between the insert and the scheduler's record of it.
 */
function racing(store: WorkflowStore) {
  const control: {
    store: WorkflowStore;
    armed?: { when: 'before' | 'after'; race: () => Promise<unknown> };
  } = { store };
  control.store = new Proxy(store, {
    get(target, prop) {
      if (prop === 'createOccurrence') {
        return async (...args: Parameters<WorkflowStore['createOccurrence']>) => {
          const armed = control.armed;
          control.armed = undefined;
          if (armed?.when === 'before') await armed.race();
          const result = await target.createOccurrence(...args);
          if (armed?.when === 'after') await armed.race();
          return result;
        };
      }
      const value = Reflect.get(target, prop, target) as unknown;
      return typeof value === 'function' ? (value as (...args: unknown[]) => unknown).bind(target) : value;
    },
  });
  return control;
}

/** The runs of schedule `id`: instance id, workflow and input, in id order. */
async function runs(engine: ContractEngine, id: string) {
  const list = await engine.client.list({ scheduleId: id, limit: 1000 });
  return list
    .map((instance) => ({ id: instance.id, workflow: instance.workflow, input: instance.input }))
    .sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
}

/**
 * What a user gets when a schedule is updated while it fires (docs/schedules.md): every run, by
 * the cadence or by `trigger()`, is stored with the definition the schedule has when the run is
 * stored: the old one's when its start lands before the `upsert()`, the new one's after; never
 * both, and an occurrence that was due when the upsert landed never gets none, even when the
 * upsert changes the cadence. Each race is run in a fixed interleaving (a store wrapper runs the
 * upsert, on another engine, between the start's read and its insert, or after the insert) and
 * freely, both calls at once on the store's connections.
 */
export function scheduleChangeRaceContract(suite: ContractSuite): void {
  const { describe, it, expect } = suite.test;
  describe('schedules: upsert() racing trigger() and a due occurrence', () => {
    const engines = contractEngines(suite);
    const workflows = [ScheduleRaceOld, ScheduleRaceNew];
    const oldName = runWorkflowName('schedule-race.old');
    const newName = runWorkflowName('schedule-race.new');

    /** Two processes on the store, one clock: `a` (its store wrapped to race) and `b`. */
    function processes(at: number) {
      const clock = new ManualWorkflowClock(at);
      const control = racing(suite.store);
      const a = engines.open({ workflows, clock }, control.store);
      const b = engines.open({ workflows, clock });
      return { clock, control, a, b };
    }

    const oldDefinition = { workflow: ScheduleRaceOld, every: '1h', input: 'old', overlap: 'allow' } as const;
    const newDefinition = { workflow: ScheduleRaceNew, every: '1h', input: 'new', overlap: 'allow' } as const;
    /** A new cadence too (every 7 hours from the epoch: no occurrence near `TICK`). */
    const newCadence = { ...newDefinition, every: '7h' } as const;

    it('createOccurrence with a revision: creates only while the schedule is still at it; after a save, nothing', async () => {
      const s = testScope();
      await suite.store.saveSchedule(scheduleSave(s.id('a'), s.workflow));
      const init = (at: number) =>
        newInstance(`${s.id('a')}@${at}`, s.workflow, { scheduleId: s.id('a'), scheduledAt: at });
      expect(await suite.store.createOccurrence(s.id('a'), null, init(1), 1)).toMatchObject({ created: true });
      expect(await suite.store.createOccurrence(s.id('a'), null, init(1), 1)).toMatchObject({ created: false });
      await suite.store.saveSchedule(
        scheduleSave(s.id('a'), s.workflow, { input: 'new', expectRevision: 1, now: BASE_TIME + 1 }),
      );
      expect(await suite.store.createOccurrence(s.id('a'), null, init(2), 1)).toBeNull();
      expect(await suite.store.get(init(2).id)).toBeNull();
      expect(await suite.store.createOccurrence(s.id('a'), null, init(1), 1)).toBeNull();
      expect(await suite.store.createOccurrence(s.id('a'), null, init(2), 2)).toMatchObject({ created: true });
    });

    it('createOccurrence with a revision, racing saves: each create lands before its save or not at all', async () => {
      const s = testScope();
      for (const i of range(8)) {
        const name = `r${i}`;
        await suite.store.saveSchedule(scheduleSave(s.id(name), s.workflow));
        const init = newInstance(`${s.id(name)}@${i}`, s.workflow, { scheduleId: s.id(name), scheduledAt: i });
        const [created, saved] = await Promise.all([
          suite.store.createOccurrence(s.id(name), null, init, 1),
          suite.store.saveSchedule(scheduleSave(s.id(name), s.workflow, { expectRevision: 1, now: BASE_TIME + 1 })),
        ]);
        expect(saved).toMatchObject({ revision: 2 });
        const stored = await suite.store.get(init.id);
        if (created) expect({ created: created.created, id: stored?.id }).toEqual({ created: true, id: init.id });
        else expect(stored).toBeNull();
        const later = { ...init, id: `${init.id}-later` };
        expect(await suite.store.createOccurrence(s.id(name), null, later, 1)).toBeNull();
      }
    });

    it('trigger(): an upsert() that lands between its read and its start makes it start the new definition, once', async () => {
      const { clock, control, a, b } = processes(TICK + 1_234);
      const id = testScope().id('trigger');
      await b.schedules.upsert(id, oldDefinition);
      control.armed = { when: 'before', race: () => b.schedules.upsert(id, newDefinition) };
      const handle = await a.schedules.trigger(id);
      expect(control.armed).toBeUndefined();
      const at = new Date(clock.now()).toISOString();
      expect(handle.id).toBe(`${id}@${at}`);
      expect(await runs(a, id)).toEqual([{ id: handle.id, workflow: newName, input: 'new' }]);
    });

    it("trigger(): an upsert() that lands after its start leaves the old definition's run, and no other", async () => {
      const { control, a, b } = processes(TICK + 1_234);
      const id = testScope().id('trigger-first');
      await b.schedules.upsert(id, oldDefinition);
      control.armed = { when: 'after', race: () => b.schedules.upsert(id, newDefinition) };
      const handle = await a.schedules.trigger(id);
      expect(await runs(a, id)).toEqual([{ id: handle.id, workflow: oldName, input: 'old' }]);
    });

    for (const [change, definition] of [
      ['a new input and workflow', newDefinition],
      ['a new cadence', newCadence],
    ] as const) {
      it(`a due occurrence: an upsert() with ${change} that lands before the scheduler's start makes it start once, with the new definition`, async () => {
        const { clock, control, a, b } = processes(TICK - 60_000);
        const id = testScope().id('due');
        await b.schedules.upsert(id, oldDefinition);
        clock.set(TICK + 1_000);
        control.armed = { when: 'before', race: () => b.schedules.upsert(id, definition) };
        await a.drainSchedules();
        expect(control.armed).toBeUndefined();
        await b.drainSchedules();
        const tick = `${id}@${new Date(TICK).toISOString()}`;
        expect(await runs(a, id)).toEqual([{ id: tick, workflow: newName, input: 'new' }]);
      });

      it(`a due occurrence: an upsert() with ${change} that lands after the scheduler's start leaves the old definition's run, and no other`, async () => {
        const { clock, control, a, b } = processes(TICK - 60_000);
        const id = testScope().id('due-first');
        await b.schedules.upsert(id, oldDefinition);
        clock.set(TICK + 1_000);
        control.armed = { when: 'after', race: () => b.schedules.upsert(id, definition) };
        await a.drainSchedules();
        expect(control.armed).toBeUndefined();
        await b.drainSchedules();
        await a.drainSchedules();
        const tick = `${id}@${new Date(TICK).toISOString()}`;
        expect(await runs(a, id)).toEqual([{ id: tick, workflow: oldName, input: 'old' }]);
      });
    }

    it('racing freely: a trigger() and a due occurrence each start once, with the old definition or the new', async () => {
      for (const i of range(6)) {
        const { clock, a, b } = processes(TICK - 60_000);
        const id = testScope().id(`free${i}`);
        await b.schedules.upsert(id, oldDefinition);
        clock.set(TICK + 1_000);
        await Promise.all([
          a.schedules.trigger(id),
          a.drainSchedules(),
          b.schedules.upsert(id, i % 2 === 0 ? newDefinition : newCadence),
        ]);
        await b.drainSchedules();
        const found = await runs(a, id);
        expect(found.map((run) => run.id)).toEqual([
          `${id}@${new Date(TICK).toISOString()}`,
          `${id}@${new Date(TICK + 1_000).toISOString()}`,
        ]);
        for (const run of found) {
          expect([
            { workflow: oldName, input: 'old' },
            { workflow: newName, input: 'new' },
          ]).toContainEqual({ workflow: run.workflow, input: run.input });
        }
      }
    });
  });
}
