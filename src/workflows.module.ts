import { Module, type DynamicModule, type Provider, type Type } from '@nestjs/common';
import { DiscoveryModule } from '@nestjs/core';
import { WorkflowClient } from './client/workflow-client.js';
import { WorkflowSchedules } from './client/workflow-schedules.js';
import { WorkflowEvents } from './events/workflow-events.js';
import { WorkflowRegistry } from './registry/workflow-registry.js';
import { WorkflowStorage } from './storage/workflow-storage.js';
import { WorkflowWorker } from './worker/workflow-worker.service.js';
import { WORKFLOWS_MODULE_OPTIONS, WORKFLOWS_RESOLVED_OPTIONS } from './workflows.constants.js';
import { WORKFLOWS_PROVIDERS } from './workflows.providers.js';
import {
  resolveWorkflowsOptions,
  type WorkflowsModuleAsyncOptions,
  type WorkflowsModuleOptions,
  type WorkflowsOptionsFactory,
} from './workflows-module-options.js';

/**
 * Durable workflows in this application: discovers `@Workflow` providers, runs the background
 * worker and the scheduler, and provides `WorkflowClient`, `WorkflowSchedules`, `WorkflowWorker` and
 * `WorkflowEvents`. Global by default.
 *
 * @example
 * WorkflowsModule.forRoot({ store: new PostgresWorkflowStore({ executor: fromPg(pool) }) })
 */
@Module({})
export class WorkflowsModule {
  /** Configures the module with options known up front. */
  static forRoot(options: WorkflowsModuleOptions & { isGlobal?: boolean } = {}): DynamicModule {
    const { isGlobal, ...rest } = options;
    return this.create([{ provide: WORKFLOWS_MODULE_OPTIONS, useValue: rest }], [], isGlobal ?? true);
  }

  /** Configures the module from providers: `useFactory` (with `inject`), `useClass` or `useExisting`. */
  static forRootAsync(options: WorkflowsModuleAsyncOptions): DynamicModule {
    const providers: Provider[] = [];
    if (options.useFactory) {
      providers.push({
        provide: WORKFLOWS_MODULE_OPTIONS,
        useFactory: options.useFactory,
        inject: options.inject ?? [],
      });
    } else if (options.useClass || options.useExisting) {
      const factory = (options.useClass ?? options.useExisting) as Type<WorkflowsOptionsFactory>;
      if (options.useClass) providers.push({ provide: factory, useClass: factory });
      providers.push({
        provide: WORKFLOWS_MODULE_OPTIONS,
        useFactory: (made: WorkflowsOptionsFactory) => made.createWorkflowsOptions(),
        inject: [factory],
      });
    } else {
      throw new TypeError('WorkflowsModule.forRootAsync() needs useFactory, useClass or useExisting.');
    }
    return this.create(providers, options.imports ?? [], options.isGlobal ?? true);
  }

  private static create(
    optionProviders: Provider[],
    imports: NonNullable<DynamicModule['imports']>,
    global: boolean,
  ): DynamicModule {
    return {
      module: WorkflowsModule,
      global,
      imports: [DiscoveryModule, ...imports],
      providers: [
        ...optionProviders,
        {
          provide: WORKFLOWS_RESOLVED_OPTIONS,
          useFactory: (options: WorkflowsModuleOptions) => resolveWorkflowsOptions(options),
          inject: [WORKFLOWS_MODULE_OPTIONS],
        },
        ...WORKFLOWS_PROVIDERS,
      ],
      exports: [
        WorkflowClient,
        WorkflowSchedules,
        WorkflowWorker,
        WorkflowEvents,
        WorkflowStorage,
        WorkflowRegistry,
        WORKFLOWS_RESOLVED_OPTIONS,
      ],
    };
  }
}
