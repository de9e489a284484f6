// WorkflowExceptionFilter in a real Nest HTTP application (Express, then Fastify), driven over HTTP: the
// library's errors answer 404, 409 and 400 with a body that says what was wrong; everything else
// keeps Nest's default handling.
import { Body, Controller, Get, NotFoundException, Param, Post, Query, type INestApplication } from '@nestjs/common';
import { APP_FILTER, NestFactory } from '@nestjs/core';
import { FastifyAdapter } from '@nestjs/platform-fastify';
import { Module } from '@nestjs/common';
import {
  Workflow,
  WorkflowClient,
  WorkflowExceptionFilter,
  WorkflowsModule,
  isWorkflowInputError,
  workflowErrorStatus,
  type WorkflowContext,
} from '@nestjs/workflows';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

@Workflow('http.order')
class OrderWorkflow {
  async run(_ctx: WorkflowContext, input: { total: number }) {
    return { charged: input.total };
  }
}

@Controller('orders')
class OrdersController {
  constructor(private readonly workflows: WorkflowClient) {}

  @Post(':id')
  async start(
    @Param('id') id: string,
    @Body() body: { total: number },
    @Query('timeout') timeout?: string,
    @Query('workflow') workflow?: string,
  ) {
    const handle = await this.workflows.start(workflow ?? OrderWorkflow, body, {
      id,
      timeout: timeout === undefined ? undefined : /^\d+$/.test(timeout) ? Number(timeout) : timeout,
    });
    return { id: handle.id };
  }

  /** The id in the body: Fastify caps path parameters at 100 characters. */
  @Post()
  async startWithId(@Body() body: { id: string; total: number }) {
    const handle = await this.workflows.start(OrderWorkflow, { total: body.total }, { id: body.id });
    return { id: handle.id };
  }

  @Get(':id')
  status(@Param('id') id: string) {
    return this.workflows.getStatus(id);
  }

  @Post(':id/cancel')
  async cancel(@Param('id') id: string) {
    await this.workflows.cancel(id);
    return { cancelled: id };
  }

  @Post(':id/signal/:name')
  signal(@Param('name') name: string, @Query('key') key: string | undefined, @Body() body: unknown) {
    return this.workflows.signal(name, body, { key });
  }

  @Get('broken/plain')
  broken(): never {
    throw new Error('a bug in the application');
  }

  @Get('broken/http')
  missing(): never {
    throw new NotFoundException('No such page.');
  }
}

@Module({
  imports: [WorkflowsModule.forRoot({ worker: { pollInterval: '10ms' } })],
  controllers: [OrdersController],
  providers: [OrderWorkflow, { provide: APP_FILTER, useClass: WorkflowExceptionFilter }],
})
class HttpAppModule {}

for (const adapter of ['express', 'fastify'] as const) {
  describe(`on ${adapter}`, () => {
    let app: INestApplication;
    let base = '';

    async function call(
      method: 'GET' | 'POST',
      path: string,
      body?: unknown,
    ): Promise<{ status: number; body: Record<string, unknown> }> {
      const response = await fetch(`${base}${path}`, {
        method,
        headers: body === undefined ? {} : { 'content-type': 'application/json' },
        body: body === undefined ? undefined : JSON.stringify(body),
      });
      return { status: response.status, body: (await response.json()) as Record<string, unknown> };
    }

    beforeAll(async () => {
      app =
        adapter === 'fastify'
          ? await NestFactory.create(HttpAppModule, new FastifyAdapter(), { logger: false })
          : await NestFactory.create(HttpAppModule, { logger: false });
      await app.listen(0, '127.0.0.1');
      base = (await app.getUrl()).replace('[::1]', '127.0.0.1');
    });

    afterAll(async () => {
      await app?.close();
    });

    describe('WorkflowExceptionFilter over HTTP', () => {
      it('answers an unknown instance with 404', async () => {
        const response = await call('GET', '/orders/nope');
        expect(response).toEqual({
          status: 404,
          body: {
            statusCode: 404,
            error: 'Not Found',
            name: 'WorkflowNotFoundError',
            message: 'No workflow instance has the id "nope".',
          },
        });
      });

      it('answers a conflicting start and an invalid state with 409', async () => {
        expect((await call('POST', '/orders/o1', { total: 5 })).status).toBe(201);
        const again = await call('POST', '/orders/o1', { total: 6 });
        expect(again.status).toBe(409);
        expect(again.body).toMatchObject({ statusCode: 409, error: 'Conflict', name: 'WorkflowAlreadyStartedError' });
        expect(again.body.message).toMatch(/already exists as http\.order@1 with another input/);
        // The same start again is idempotent, not a conflict.
        expect((await call('POST', '/orders/o1', { total: 5 })).status).toBe(201);
        for (let i = 0; (await call('GET', '/orders/o1')).body.status !== 'completed'; i++) {
          if (i > 400) throw new Error('the instance never completed');
          await new Promise((resolve) => setTimeout(resolve, 10));
        }
        const cancel = await call('POST', '/orders/o1/cancel');
        expect(cancel).toMatchObject({
          status: 409,
          body: { name: 'WorkflowInvalidStateError', message: `Instance "o1" is completed and can't be cancelled.` },
        });
      });

      it('answers input errors with 400, having stored nothing', async () => {
        const cases: Array<[string, unknown, RegExp]> = [
          ['/orders/o2?timeout=0', { total: 1 }, /Invalid start\(\) option "timeout": 0\. It must be longer than 0/],
          ['/orders/o2?timeout=5%20parsecs', { total: 1 }, /Invalid start\(\) option "timeout": "5 parsecs"/],
          ['/orders', { id: 'x'.repeat(300), total: 1 }, /instance id is 300 characters long/],
          ['/orders/o2?workflow=http.unknown', { total: 1 }, /http\.unknown/],
          ['/orders/o2/signal/%24reserved', { ok: true }, /names starting with "\$" are reserved/],
          ['/orders/o2/signal/paid?key=' + 'k'.repeat(300), { ok: true }, /signal key is 300 characters long/],
        ];
        for (const [path, body, message] of cases) {
          const response = await call('POST', path, body);
          expect(response.status, `${path}: ${JSON.stringify(response.body)}`).toBe(400);
          expect(response.body).toMatchObject({ statusCode: 400, error: 'Bad Request' });
          expect(response.body.message).toMatch(message);
        }
        expect((await call('GET', '/orders/o2')).status).toBe(404);
      });

      it('leaves every other error to Nest: an HttpException as thrown, anything else 500', async () => {
        expect(await call('GET', '/orders/broken/http')).toEqual({
          status: 404,
          body: { statusCode: 404, error: 'Not Found', message: 'No such page.' },
        });
        expect(await call('GET', '/orders/broken/plain')).toEqual({
          status: 500,
          body: { statusCode: 500, message: 'Internal server error' },
        });
      });
    });
  });
}

describe('workflowErrorStatus() and isWorkflowInputError()', () => {
  it('classify only what the library refused: a TypeError of the application is not input', () => {
    expect(workflowErrorStatus(new TypeError('x is not a function'))).toBeNull();
    expect(isWorkflowInputError(new RangeError('out of range'))).toBe(false);
    expect(workflowErrorStatus(new Error('boom'))).toBeNull();
  });
});
