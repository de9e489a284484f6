// Streams and callbacks: an HTTP endpoint starts a workflow whose step streams a fake language
// model's words; the page follows them over server-sent events as they are written; then the
// workflow waits for an approval callback, which the page's button (a second request) completes.
//
//   npm run example:drafts        then open the URL it prints (PORT, default 3000)
import 'reflect-metadata';
import { NestFactory } from '@nestjs/core';
import { FastifyAdapter } from '@nestjs/platform-fastify';
import { AppModule } from './app.module.js';

const app = await NestFactory.create(AppModule, new FastifyAdapter(), { logger: ['error', 'warn'] });
app.enableShutdownHooks();
await app.listen(Number(process.env.PORT ?? 3000), '127.0.0.1');
console.log(`Drafts listening on ${await app.getUrl()}`);
