// An operator's pause and resume in telemetry: a span per call, a count per action, and a due
// backlog (the gauge the health indicator's threshold matches) that leaves paused instances out.
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { Workflow, type WorkflowContext, type WorkflowDefinition } from '../../src/index.js';
import { createTestApp, type TestApp } from '../support/nest-test-app.js';
import { installOpenTelemetry } from './otel-setup.js';

const otel = installOpenTelemetry();

@Workflow('tel.pausable')
class Pausable implements WorkflowDefinition<null, string> {
  async run(ctx: WorkflowContext) {
    return ctx.step('only', () => 'done');
  }
}

let app: TestApp;
beforeEach(() => otel.resetSpans());
afterEach(async () => app?.close());

describe('telemetry of pauses', () => {
  it('spans and counts pause(), resume(), pauseWorkflow() and resumeWorkflow(); the due backlog leaves paused instances out', async () => {
    app = await createTestApp([Pausable]);
    const a = await app.client.start(Pausable, null);
    await app.client.start(Pausable, null);
    expect((await otel.collect()).get('workflows.backlog.due')?.[0]?.value).toBe(2);
    await app.client.pause(a.id, 'look');
    expect((await otel.collect()).get('workflows.backlog.due')?.[0]?.value).toBe(1);
    await app.client.pauseWorkflow(Pausable);
    expect((await otel.collect()).get('workflows.backlog.due')?.[0]?.value).toBe(0);
    await app.client.resumeWorkflow(Pausable);
    await app.client.resume(a.id);
    expect((await otel.collect()).get('workflows.backlog.due')?.[0]?.value).toBe(2);

    const spans = otel.spans().map((s) => [s.name, s.attributes['workflow.instance.id'] ?? null]);
    expect(spans.filter(([name]) => !String(name).startsWith('workflow.start'))).toEqual([
      ['workflow.pause', a.id],
      ['workflow.pause-workflow tel.pausable', null],
      ['workflow.resume-workflow tel.pausable', null],
      ['workflow.resume', a.id],
    ]);
    const actions = (await otel.collect()).get('workflows.operator.actions') ?? [];
    expect(
      Object.fromEntries(actions.map((point) => [String(point.attributes['workflow.action']), point.value])),
    ).toEqual({ pause: 1, resume: 1, 'pause-workflow': 1, 'resume-workflow': 1 });
  });
});
