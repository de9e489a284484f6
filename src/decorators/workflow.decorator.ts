import { Injectable } from '@nestjs/common';
import type { WorkflowOptions } from './workflow-options.js';

/** The metadata key `@Workflow` stores its name and options under. */
export const WORKFLOW_METADATA = 'workflows:definition';

export interface WorkflowMetadata {
  name: string;
  options: WorkflowOptions;
}

/**
 * Declares a workflow: a class with `run(ctx, input)`. The class becomes injectable (constructor
 * injection works as for any provider) and must be listed in a module's `providers`. Several
 * classes may share a name with different `version`s. Options are validated at startup.
 *
 * @example
 * @Workflow('orders.fulfil', { version: 1, timeout: '30d' })
 * export class FulfilOrder implements WorkflowDefinition<Order, Receipt> { ... }
 */
export function Workflow(name: string, options: WorkflowOptions = {}): ClassDecorator {
  if (typeof name !== 'string' || name.trim() === '') {
    throw new TypeError(
      `@Workflow() needs a non-empty name, such as @Workflow('orders.fulfil'); got ${JSON.stringify(name)}.`,
    );
  }
  return (target) => {
    Reflect.defineMetadata(WORKFLOW_METADATA, { name, options } satisfies WorkflowMetadata, target);
    Injectable()(target);
  };
}

/** The `@Workflow` metadata of a class, or `undefined`. */
export function getWorkflowMetadata(target: unknown): WorkflowMetadata | undefined {
  if (typeof target !== 'function') return undefined;
  return Reflect.getMetadata(WORKFLOW_METADATA, target) as WorkflowMetadata | undefined;
}
