import { afterEach, describe, expect, it } from 'vitest';
import { Workflow, type WorkflowContext } from '../../src/index.js';
import { createEngineApp, type EngineApp } from './support/engine-app.js';

/** The code the process runs: tests change it between drains, as a deploy would. */
class Release {
  code: 'v1' | 'patched' | 'two-patches' | 'renamed-old-branch' | 'deprecated' | 'removed' | 'in-step' = 'v1';
  /** The steps whose functions ran, in order, per instance. */
  ran: string[] = [];
}

@Workflow('patches.order')
class Order {
  constructor(private readonly release: Release) {}

  async run(ctx: WorkflowContext): Promise<string> {
    const step = (name: string) => ctx.step(name, () => void this.release.ran.push(`${ctx.id}:${name}`));
    await step('reserve');
    await ctx.sleep('settle', '1m');
    switch (this.release.code) {
      case 'v1':
        await step('charge-dollars');
        await ctx.sleep('cool-off', '1m');
        await ctx.sleep('handover', '1m');
        await step('ship');
        return 'v1';
      case 'patched':
      case 'two-patches':
      case 'renamed-old-branch':
        if (ctx.patched('cents')) await step('charge-cents');
        else await step(this.release.code === 'renamed-old-branch' ? 'charge-usd' : 'charge-dollars');
        // Asked twice in one run: the same answer, not a reused name.
        expect(ctx.patched('cents')).toBe(ctx.patched('cents'));
        await ctx.sleep('cool-off', '1m');
        if (this.release.code === 'two-patches' && ctx.patched('insured')) await step('insure');
        await ctx.sleep('handover', '1m');
        await step('ship');
        return ctx.patched('cents') ? 'cents' : 'dollars';
      case 'deprecated':
        ctx.deprecatePatch('cents');
        await step('charge-cents');
        await ctx.sleep('cool-off', '1m');
        await ctx.sleep('handover', '1m');
        await step('ship');
        return 'cents';
      case 'removed':
        await step('charge-cents');
        await ctx.sleep('cool-off', '1m');
        await ctx.sleep('handover', '1m');
        await step('ship');
        return 'cents';
      case 'in-step':
        await ctx.step('charge-cents', () => (ctx.patched('cents') ? 1 : 0));
        return 'never';
    }
  }
}

let app: EngineApp;
let release: Release;
afterEach(async () => app?.close());

async function boot() {
  release = new Release();
  app = await createEngineApp({ workflows: [new Order(release)], retry: { attempts: 3, backoff: '1s' } });
}

async function journalOf(id: string) {
  const status = await app.client.getStatus(id, { journal: true });
  return Object.fromEntries(status.journal!.map((entry) => [entry.name, entry]));
}

/** Runs everything due, then moves the clock a minute, until nothing sleeps any more. */
async function runToEnd() {
  for (let round = 0; round < 5; round++) {
    await app.worker.drain();
    app.clock.advance('1m');
  }
  await app.worker.drain();
}

/** Starts an instance on `code` and runs it until it sleeps in "cool-off": past the patch point. */
async function pastThePoint(id: string, code: Release['code']) {
  release.code = code;
  const handle = await app.client.start(Order, null, { id });
  await app.worker.drain();
  app.clock.advance('1m');
  await app.worker.drain();
  return handle;
}

describe('ctx.patched()', () => {
  it('gives false to an instance that went past the point before the patch, true to the others, and journals each answer', async () => {
    await boot();
    const before = await app.client.start(Order, null, { id: 'before' }); // passes "charge" on v1
    await app.worker.drain();
    app.clock.advance('1m');
    await app.worker.drain();
    expect(Object.keys(await journalOf('before'))).toContain('charge-dollars');
    const waiting = await app.client.start(Order, null, { id: 'waiting' }); // suspended before the point on v1
    await app.worker.drain();

    release.code = 'patched';
    const after = await app.client.start(Order, null, { id: 'after' });
    await runToEnd();

    expect(await before.result()).toBe('dollars');
    expect(await waiting.result()).toBe('cents');
    expect(await after.result()).toBe('cents');
    expect((await journalOf('before'))['$patch:cents']).toMatchObject({ kind: 'value', value: false });
    expect((await journalOf('waiting'))['$patch:cents']).toMatchObject({ kind: 'value', value: true });
    expect((await journalOf('after'))['$patch:cents']).toMatchObject({ kind: 'value', value: true });
    expect(release.ran.filter((name) => name.includes('charge')).sort()).toEqual([
      'after:charge-cents',
      'before:charge-dollars',
      'waiting:charge-cents',
    ]);
  });

  it('decides several patches of one workflow each at its own point', async () => {
    await boot();
    const old = await pastThePoint('old', 'v1'); // past "cents", not yet at "insured"
    release.code = 'two-patches';
    const fresh = await app.client.start(Order, null, { id: 'fresh' });
    await runToEnd();
    expect(await old.result()).toBe('dollars');
    expect(await fresh.result()).toBe('cents');
    expect((await journalOf('old'))['$patch:cents']).toMatchObject({ value: false });
    expect((await journalOf('old'))['$patch:insured']).toMatchObject({ value: true });
    expect((await journalOf('fresh'))['$patch:cents']).toMatchObject({ value: true });
    expect((await journalOf('fresh'))['$patch:insured']).toMatchObject({ value: true });
    expect(release.ran.filter((name) => name.endsWith(':insure')).sort()).toEqual(['fresh:insure', 'old:insure']);
  });

  it('refuses a patch inside a step with WorkflowPatchError, without retrying the step', async () => {
    await boot();
    release.code = 'in-step';
    const handle = await app.client.start(Order, null);
    await runToEnd();
    const status = await handle.status({ journal: true });
    expect(status.status).toBe('failed');
    expect(status.error).toMatchObject({ name: 'WorkflowPatchError' });
    expect(status.error!.message).toMatch(/inside step "charge-cents".*never replays.*call ctx.patched\(\) in run\(\)/);
    expect(status.journal!.find((entry) => entry.name === 'charge-cents')).toMatchObject({ attempts: 1 });
    expect(status.journal!.some((entry) => entry.name.startsWith('$patch:'))).toBe(false);
  });

  it('refuses an empty patch id with WorkflowPatchError', async () => {
    @Workflow('patches.bad-id')
    class BadId {
      async run(ctx: WorkflowContext) {
        return ctx.patched('');
      }
    }
    app = await createEngineApp({ workflows: [BadId] });
    const handle = await app.client.start(BadId, null);
    await app.worker.drain();
    const status = await handle.status({ journal: true });
    expect(status.error).toMatchObject({ name: 'WorkflowPatchError' });
    expect(status.error!.message).toMatch(/needs a non-empty string patch id/);
    expect(status.journal).toEqual([]);
  });

  it('still fails an instance whose old branch no longer matches its journal', async () => {
    await boot();
    const before = await app.client.start(Order, null);
    await app.worker.drain();
    app.clock.advance('1m');
    await app.worker.drain();
    release.code = 'renamed-old-branch';
    await runToEnd();
    const status = await before.status();
    expect(status.status).toBe('failed');
    expect(status.error).toMatchObject({ name: 'WorkflowNonDeterminismError' });
    expect(status.error!.message).toMatch(/"charge-dollars" was recorded by an earlier run but never reached/);
  });
});

describe('ctx.deprecatePatch() and the release that removes the patch', () => {
  it('lets instances that recorded the patch run on, records it for new ones, and fails those that went past without it', async () => {
    await boot();
    const passedWithout = await pastThePoint('passed-without', 'v1');
    const passedWith = await pastThePoint('passed-with', 'patched');
    release.code = 'deprecated';
    const fresh = await app.client.start(Order, null, { id: 'fresh' });
    await runToEnd();
    expect(await passedWith.result()).toBe('cents');
    expect(await fresh.result()).toBe('cents');
    expect((await journalOf('fresh'))['$patch:cents']).toMatchObject({ value: true });
    const refused = await passedWithout.status();
    expect(refused.status).toBe('failed');
    expect(refused.error).toMatchObject({ name: 'WorkflowNonDeterminismError' });
    expect(refused.error!.message).toMatch(/went past patch "cents" on code without the patch.*Keep ctx.patched\(\)/);
    expect(release.ran).not.toContain('passed-without:charge-cents');
  });

  it('fails an instance whose journaled answer was false', async () => {
    await boot();
    const old = await pastThePoint('old', 'v1');
    release.code = 'patched';
    app.clock.advance('1m');
    await app.worker.drain(); // replayed on the patched code: false journaled, now sleeping in "handover"
    expect((await journalOf('old'))['$patch:cents']).toMatchObject({ value: false });
    expect((await old.status()).status).toBe('suspended');
    release.code = 'deprecated';
    await runToEnd();
    expect((await old.status()).error).toMatchObject({ name: 'WorkflowNonDeterminismError' });
  });

  it('replays an instance that recorded the patch on code that no longer mentions it', async () => {
    await boot();
    const handle = await pastThePoint('with-marker', 'patched');
    expect(Object.keys(await journalOf(handle.id))).toContain('$patch:cents');
    release.code = 'removed';
    await runToEnd();
    expect(await handle.result()).toBe('cents');
  });
});

/** A fix inside one branch of a `Promise.all`, decided before the branches start (docs/deploying-changes.md). */
@Workflow('patches.parallel')
class Parallel {
  constructor(private readonly release: Release) {}

  async run(ctx: WorkflowContext): Promise<string> {
    const fixed = this.release.code === 'patched' && ctx.patched('fee');
    const [charged] = await Promise.all([
      (async () => {
        await ctx.sleep('settle', '1m');
        const name = fixed ? 'charge-with-fee' : 'charge';
        await ctx.step(name, () => void this.release.ran.push(`${ctx.id}:${name}`));
        return name;
      })(),
      (async () => {
        for (const name of ['pack', 'label', 'weigh']) await ctx.step(name, () => name);
      })(),
    ]);
    return charged;
  }
}

describe('ctx.patched() before a Promise.all', () => {
  it('gives true to an instance on patched code and false to one already inside the branches, however far the other branch replayed', async () => {
    release = new Release();
    app = await createEngineApp({ workflows: [new Parallel(release)] });
    // On the old code: inside the branches (packed, labelled, weighed), asleep before the charge.
    const old = await app.client.start(Parallel, null, { id: 'old' });
    await app.worker.drain();
    release.code = 'patched';
    // On the new code: the same point, its other branch's three steps recorded, so its replay (when
    // the sleep ends) is behind the sleeping branch: asked there, the first answer would be false.
    const fresh = await app.client.start(Parallel, null, { id: 'fresh' });
    await app.worker.drain();
    app.clock.advance('1m');
    await app.worker.drain();
    expect(await old.result()).toBe('charge');
    expect(await fresh.result()).toBe('charge-with-fee');
    expect((await journalOf('old'))['$patch:fee']).toMatchObject({ value: false });
    expect((await journalOf('fresh'))['$patch:fee']).toMatchObject({ value: true });
    expect(release.ran.sort()).toEqual(['fresh:charge-with-fee', 'old:charge']);
  });
});
