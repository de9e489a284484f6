import { Catch, HttpException, HttpStatus, type ArgumentsHost } from '@nestjs/common';
import { BaseExceptionFilter } from '@nestjs/core';
import { isWorkflowInputError } from '../errors/workflow-input-error.js';
import { UnknownWorkflowError } from '../errors/unknown-workflow.error.js';
import { WorkflowAlreadyStartedError } from '../errors/workflow-already-started.error.js';
import { WorkflowInvalidStateError } from '../errors/workflow-invalid-state.error.js';
import { WorkflowNotFoundError } from '../errors/workflow-not-found.error.js';

/**
 * The HTTP status a library error stands for, or `null` for anything else: `WorkflowNotFoundError`
 * 404; `WorkflowAlreadyStartedError` and `WorkflowInvalidStateError` 409 (the request conflicts
 * with the instance's state); bad input refused before anything was stored
 * (`isWorkflowInputError()`, and `UnknownWorkflowError`: the request named a workflow this app
 * doesn't have) 400.
 */
export function workflowErrorStatus(error: unknown): HttpStatus | null {
  if (error instanceof WorkflowNotFoundError) return HttpStatus.NOT_FOUND;
  if (error instanceof WorkflowAlreadyStartedError || error instanceof WorkflowInvalidStateError)
    return HttpStatus.CONFLICT;
  if (error instanceof UnknownWorkflowError || isWorkflowInputError(error)) return HttpStatus.BAD_REQUEST;
  return null;
}

const REASONS: Partial<Record<HttpStatus, string>> = {
  [HttpStatus.NOT_FOUND]: 'Not Found',
  [HttpStatus.CONFLICT]: 'Conflict',
  [HttpStatus.BAD_REQUEST]: 'Bad Request',
};

/**
 * Answers the library's errors with their HTTP status (see `workflowErrorStatus()`) and a body
 * `{ statusCode, error, message, name }`; every other exception goes on to Nest's default handling
 * (an `HttpException` as usual, anything else 500). For HTTP applications (Express or Fastify):
 * `app.useGlobalFilters(new WorkflowExceptionFilter(app.get(HttpAdapterHost).httpAdapter))`, or
 * `{ provide: APP_FILTER, useClass: WorkflowExceptionFilter }`, or `@UseFilters()` on a controller.
 */
@Catch()
export class WorkflowExceptionFilter extends BaseExceptionFilter {
  override catch(exception: unknown, host: ArgumentsHost): void {
    const status = workflowErrorStatus(exception);
    if (status === null) return super.catch(exception, host);
    const error = exception as Error;
    const body = { statusCode: status, error: REASONS[status], message: error.message, name: error.name };
    super.catch(new HttpException(body, status, { cause: error }), host);
  }
}
