import {
  Body,
  Controller,
  HttpCode,
  HttpException,
  HttpStatus,
  Module,
  Param,
  Post,
  UseGuards,
  type CanActivate,
  type DynamicModule,
  type Type,
} from '@nestjs/common';
import { WorkflowClient } from '../client/workflow-client.js';
import { WorkflowCallbackTokenError } from '../errors/workflow-callback-token.error.js';

/** `WorkflowCallbacksModule.forRoot()`'s options. */
export interface WorkflowCallbacksOptions {
  /** Where the controller is mounted. Default `'workflow-callbacks'`: `POST /workflow-callbacks/:token`. */
  path?: string;
  /**
   * The guard in front of it (the app's, or one that checks a webhook provider's signature), as
   * for the dashboard. Default none: the token alone (256 random bits, usable once) authorizes.
   */
  guard?: Type<CanActivate> | CanActivate;
}

const STATUS = {
  unknown: HttpStatus.NOT_FOUND,
  used: HttpStatus.CONFLICT,
  expired: HttpStatus.GONE,
} as const;

/** A token refused, as the HTTP status a webhook sender understands (404 unknown, 409 used, 410 expired). */
function refused(error: unknown): never {
  if (error instanceof WorkflowCallbackTokenError) {
    throw new HttpException(
      { statusCode: STATUS[error.reason], name: error.name, reason: error.reason, message: error.message },
      STATUS[error.reason],
    );
  }
  throw error;
}

function createCallbacksController(path: string, guard: Type<CanActivate> | CanActivate | null): Type {
  @Controller(path)
  class WorkflowCallbacksController {
    constructor(private readonly client: WorkflowClient) {}

    /** Completes the callback with the request's body as its payload (JSON, or whatever the app's body parser gives). */
    @Post(':token')
    @HttpCode(HttpStatus.OK)
    async complete(@Param('token') token: string, @Body() body: unknown): Promise<{ completed: true }> {
      await this.client.completeCallback(token, body ?? null).catch(refused);
      return { completed: true };
    }

    /** Fails the callback: `{ message, name? }` becomes the error `ctx.waitForCallback()` throws. */
    @Post(':token/fail')
    @HttpCode(HttpStatus.OK)
    async fail(
      @Param('token') token: string,
      @Body() body: { message?: unknown; name?: unknown } | undefined,
    ): Promise<{ failed: true }> {
      const error = new Error(typeof body?.message === 'string' ? body.message : 'The callback was failed over HTTP.');
      if (typeof body?.name === 'string' && body.name !== '') error.name = body.name;
      await this.client.failCallback(token, error).catch(refused);
      return { failed: true };
    }
  }
  if (guard !== null) UseGuards(guard)(WorkflowCallbacksController);
  return WorkflowCallbacksController;
}

/**
 * An HTTP endpoint that completes callbacks, for webhooks: `POST <path>/:token` with the payload as
 * its body completes the callback (`ctx.waitForCallback()` resolves with it), `POST
 * <path>/:token/fail` fails it. Answers 200, or 404 / 409 / 410 for an unknown, used or expired
 * token. Needs `WorkflowsModule` (global by default).
 *
 * @example
 * imports: [WorkflowsModule.forRoot({ ... }), WorkflowCallbacksModule.forRoot({ path: 'hooks/workflows', guard: WebhookSignatureGuard })]
 */
@Module({})
export class WorkflowCallbacksModule {
  static forRoot(options: WorkflowCallbacksOptions = {}): DynamicModule {
    const path = options.path ?? 'workflow-callbacks';
    if (typeof path !== 'string') throw new TypeError('WorkflowCallbacksModule: `path` must be a string.');
    return { module: WorkflowCallbacksModule, controllers: [createCallbacksController(path, options.guard ?? null)] };
  }
}
