// Streams and callbacks across two processes, on each SQL server: the workflow runs in a worker
// process; this process serves HTTP (no worker of its own), starts it, follows its stream over
// server-sent events while the words are written, and completes its approval callback with a POST.
import 'reflect-metadata';
import { spawn, type ChildProcess } from 'node:child_process';
import { Body, Controller, Get, Headers, Module, Param, Post, Sse, type INestApplication } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { FastifyAdapter } from '@nestjs/platform-fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  afterLastEventId,
  toServerSentEvents,
  WorkflowCallbacksModule,
  WorkflowClient,
  WorkflowsModule,
} from '../../src/index.js';
import { freshSchema, openSqlTarget, requireServer, SERVER, SQL_KINDS, type SqlTarget } from '../support/sql-target.js';
import { StreamApproval, WORDS } from './fixtures/stream-workflows.js';

@Controller('runs')
class RunsController {
  constructor(private readonly client: WorkflowClient) {}

  @Post()
  async start(@Body() body: { delay?: number }) {
    const handle = await this.client.start(StreamApproval, { delay: body?.delay });
    return { id: handle.id };
  }

  @Sse(':id/out')
  out(@Param('id') id: string, @Headers('last-event-id') last?: string) {
    return toServerSentEvents(this.client.readStream(id, 'out', { after: afterLastEventId(last) }));
  }

  @Get(':id/result')
  async result(@Param('id') id: string) {
    return this.client.handle(id).result({ timeout: '20s' });
  }
}

interface SseEvent {
  type: string;
  id?: string;
  data: unknown;
  at: number;
}

/** The events of an SSE response as they arrive (with their arrival time), until it ends. */
async function readEvents(url: string, headers: Record<string, string> = {}): Promise<SseEvent[]> {
  const response = await fetch(url, { headers: { accept: 'text/event-stream', ...headers } });
  expect(response.headers.get('content-type')).toMatch(/text\/event-stream/);
  const events: SseEvent[] = [];
  const decoder = new TextDecoder();
  let buffer = '';
  for await (const chunk of response.body as unknown as AsyncIterable<Uint8Array>) {
    buffer += decoder.decode(chunk, { stream: true });
    let end: number;
    while ((end = buffer.indexOf('\n\n')) >= 0) {
      const block = buffer.slice(0, end);
      buffer = buffer.slice(end + 2);
      const event: SseEvent = { type: 'message', data: undefined, at: Date.now() };
      for (const line of block.split('\n')) {
        const [field, ...rest] = line.split(':');
        const value = rest.join(':').replace(/^ /, '');
        if (field === 'event') event.type = value;
        if (field === 'id') event.id = value;
        if (field === 'data') event.data = JSON.parse(value);
      }
      events.push(event);
      if (event.type === 'end') return events;
    }
  }
  return events;
}

for (const kind of SQL_KINDS) {
  const available = await requireServer(kind, 'streams and callbacks e2e');
  describe.skipIf(!available)(`streams and callbacks across two processes on ${SERVER[kind]}`, () => {
    const schema = freshSchema(kind, 'e2e_streams');
    let target: SqlTarget;
    let worker: ChildProcess;
    let app: INestApplication;
    let base: string;

    beforeAll(async () => {
      target = openSqlTarget(kind, schema);
      await target.store.init();
      worker = spawn(
        process.execPath,
        ['--import', './scripts/register-ts.mjs', 'test/e2e/fixtures/stream-worker.ts'],
        {
          env: { ...process.env, WF_STORE: kind, WF_SCHEMA: schema },
          stdio: ['ignore', 'pipe', 'inherit'],
        },
      );
      await new Promise<void>((resolve, reject) => {
        worker.once('exit', (code) => reject(new Error(`worker exited early with ${code}`)));
        worker.stdout!.on('data', (data: Buffer) => data.toString().includes('ready') && resolve());
      });
      @Module({
        imports: [
          WorkflowsModule.forRoot({ store: target.store, worker: false }),
          WorkflowCallbacksModule.forRoot({ path: 'hooks' }),
        ],
        controllers: [RunsController],
        providers: [StreamApproval],
      })
      class HttpModule {}
      app = await NestFactory.create(HttpModule, new FastifyAdapter(), { logger: ['error'] });
      await app.listen(0, '127.0.0.1');
      base = await app.getUrl();
    }, 60_000);

    afterAll(async () => {
      await app?.close();
      if (worker && worker.exitCode === null) {
        worker.kill('SIGTERM');
        await new Promise((resolve) => worker.once('exit', resolve));
      }
      await target?.close({ drop: true });
    });

    it('streams the words to a browser-like SSE reader while the step runs, resumes after Last-Event-ID, and completes the approval over HTTP', async () => {
      const { id } = (await (
        await fetch(`${base}/runs`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: '{"delay":60}',
        })
      ).json()) as { id: string };
      const events = await readEvents(`${base}/runs/${id}/out`);
      const words = events.filter((e) => e.type === 'value' && (e.data as { word?: string }).word);
      expect(words.map((e) => (e.data as { word: string }).word)).toEqual(WORDS);
      expect(words.map((e) => Number(e.id))).toEqual(WORDS.map((_, i) => i + 1));
      // Live: the words came over a span of time, not all at once at the end.
      expect(words.at(-1)!.at - words[0]!.at).toBeGreaterThan(WORDS.length * 20);
      const approval = events.find((e) => (e.data as { approve?: string } | null)?.approve);
      expect(events.at(-1)!.type).toBe('end');

      // A reconnect with Last-Event-ID gets what came after it, then the end.
      const resumed = await readEvents(`${base}/runs/${id}/out`, { 'last-event-id': '6' });
      expect(resumed.map((e) => [e.type, e.id])).toEqual([
        ['value', '7'],
        ['value', '8'],
        ['value', '9'],
        ['end', '9'],
      ]);

      const token = (approval!.data as { approve: string }).approve;
      const post = (path: string, body: unknown) =>
        fetch(`${base}/hooks/${path}`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify(body),
        });
      expect((await post(token, { by: 'ann' })).status).toBe(200);
      expect((await post(token, { by: 'bob' })).status).toBe(409);
      expect((await post('x'.repeat(43), { by: 'eve' })).status).toBe(404);
      expect(await (await fetch(`${base}/runs/${id}/result`)).json()).toEqual({
        text: WORDS.join(' '),
        approvedBy: 'ann',
      });
    }, 60_000);
  });
}
