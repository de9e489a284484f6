import { Injectable, Module, type CanActivate, type ExecutionContext, type INestApplication } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { FastifyAdapter } from '@nestjs/platform-fastify';
import { WorkflowsDashboardModule, type WorkflowsDashboardOptions } from '../../src/dashboard/index.js';
import {
  NonRetryableError,
  Workflow,
  WorkflowsModule,
  type WorkflowContext,
  type WorkflowDefinition,
  type WorkflowsModuleOptions,
} from '../../src/index.js';

/** Lets a request in when it carries the cookie `ops=letmein` (what an app's session guard would check). */
export class CookieGuard implements CanActivate {
  canActivate(context: ExecutionContext): boolean {
    const headers = context.switchToHttp().getRequest<{ headers: Record<string, string | undefined> }>().headers;
    return (headers.cookie ?? '').split(/;\s*/).includes('ops=letmein');
  }
}

/** Switches the failing step of `dash.flaky` on and off from the test. */
@Injectable()
export class Switches {
  fail = true;
}

export interface OrderInput {
  order: string;
  note?: string;
}

/** Reserves, waits for an approval signal keyed by the order, charges (undone by a refund), then sleeps and ships. */
@Workflow('dash.order')
export class OrderFlow implements WorkflowDefinition<OrderInput, { shipped: string }> {
  async run(ctx: WorkflowContext, input: OrderInput) {
    await ctx.step('reserve', () => ({ reserved: input.order }));
    ctx.setStatus({ stage: 'awaiting approval' });
    const approval = await ctx.waitForSignal<{ by: string }>('approval', 'order.approved', { key: input.order });
    await ctx.step('charge', () => ({ charged: 42, by: approval.by }), { compensate: () => undefined });
    ctx.setStatus({ stage: 'charged' });
    await ctx.sleep('cool-off', '1h');
    await ctx.step('ship', () => 'parcel-1');
    return { shipped: input.order };
  }
}

/** Fails while `Switches.fail` is on (no retries), else completes. */
@Workflow('dash.flaky')
export class FlakyFlow implements WorkflowDefinition<number, number> {
  constructor(private readonly switches: Switches) {}
  async run(ctx: WorkflowContext, n: number) {
    return ctx.step('maybe', () => {
      if (this.switches.fail) throw new NonRetryableError('the switch is on');
      return n * 2;
    });
  }
}

export type Adapter = 'express' | 'fastify';

/** A real Nest HTTP app with the workflows module, the dashboard and both workflows, listening on a free port. */
export async function startDashboardApp(
  adapter: Adapter,
  workflows: WorkflowsModuleOptions,
  dashboard: WorkflowsDashboardOptions,
  globalPrefix?: string,
): Promise<{ app: INestApplication; url: string }> {
  @Module({
    imports: [WorkflowsModule.forRoot(workflows), WorkflowsDashboardModule.forRoot(dashboard)],
    providers: [Switches, OrderFlow, FlakyFlow],
  })
  class DashboardTestApp {}
  const app =
    adapter === 'fastify'
      ? await NestFactory.create(DashboardTestApp, new FastifyAdapter(), { logger: false })
      : await NestFactory.create(DashboardTestApp, { logger: false });
  if (globalPrefix) app.setGlobalPrefix(globalPrefix);
  await app.listen(0, '127.0.0.1');
  const address = app.getHttpServer().address() as { port: number };
  return { app, url: `http://127.0.0.1:${address.port}` };
}
