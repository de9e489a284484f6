import { Injectable, type OnModuleInit } from '@nestjs/common';
import { DiscoveryService } from '@nestjs/core';
import { getWorkflowMetadata } from '../decorators/workflow.decorator.js';
import { WorkflowRegistry, type WorkflowClassLike } from './workflow-registry.js';

/**
 * Finds the `@Workflow` providers of the application (as `@nestjs/bullmq` finds processors) and
 * registers them, so definitions are validated when the application starts.
 */
@Injectable()
export class WorkflowExplorer implements OnModuleInit {
  constructor(
    private readonly discovery: DiscoveryService,
    private readonly registry: WorkflowRegistry,
  ) {}

  onModuleInit(): void {
    for (const wrapper of this.discovery.getProviders()) {
      if (wrapper.isAlias) continue;
      const metatype = (wrapper.instance as object | undefined)?.constructor ?? wrapper.metatype;
      if (!metatype || !getWorkflowMetadata(metatype)) continue;
      if (!wrapper.isDependencyTreeStatic()) {
        throw new TypeError(
          `@Workflow class ${metatype.name} is request-scoped (or depends on a request-scoped provider). ` +
            'Workflows run outside any request: make it and its dependencies singletons.',
        );
      }
      if (!wrapper.instance) continue;
      this.registry.register(metatype as WorkflowClassLike, wrapper.instance);
    }
    this.registry.markCollected();
  }
}
