import { Module, type DynamicModule, type Provider, type Type } from '@nestjs/common';
import { DiscoveryModule, ModuleRef } from '@nestjs/core';
import { WorkflowClient } from './client/workflow-client.js';
import { WorkflowEvents } from './events/workflow-events.js';
import { WorkflowExplorer } from './registry/workflow-explorer.js';
import { WorkflowRegistry } from './registry/workflow-registry.js';
import { InMemoryWorkflowStore } from './storage/in-memory-workflow.store.js';
import { WorkflowStorage } from './storage/workflow-storage.js';
import type { WorkflowStore } from './storage/workflow-store.js';
import { WorkflowWorker } from './worker/workflow-worker.service.js';
import { WORKFLOWS_MODULE_OPTIONS, WORKFLOWS_RESOLVED_OPTIONS } from './workflows.constants.js';
import {
  resolveWorkflowsOptions,
  type ResolvedWorkflowsOptions,
  type WorkflowsModuleAsyncOptions,
  type WorkflowsModuleOptions,
  type WorkflowsOptionsFactory,
} from './workflows-module-options.js';

/**
 * Durable workflows in this application: discovers `@Workflow` providers, runs the background
 * worker, and provides `WorkflowClient`, `WorkflowWorker` and `WorkflowEvents`. Global by default.
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
      providers.push({ provide: WORKFLOWS_MODULE_OPTIONS, useFactory: options.useFactory, inject: options.inject ?? [] });
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

  private static create(optionProviders: Provider[], imports: NonNullable<DynamicModule['imports']>, global: boolean): DynamicModule {
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
        {
          provide: WorkflowStorage,
          useFactory: async (options: ResolvedWorkflowsOptions, moduleRef: ModuleRef) => new WorkflowStorage(await createStore(options, moduleRef)),
          inject: [WORKFLOWS_RESOLVED_OPTIONS, ModuleRef],
        },
        {
          provide: WorkflowRegistry,
          useFactory: (options: ResolvedWorkflowsOptions) => new WorkflowRegistry(options.retry),
          inject: [WORKFLOWS_RESOLVED_OPTIONS],
        },
        { provide: WorkflowEvents, useFactory: () => new WorkflowEvents() },
        WorkflowExplorer,
        WorkflowWorker,
        WorkflowClient,
      ],
      exports: [WorkflowClient, WorkflowWorker, WorkflowEvents, WorkflowStorage, WorkflowRegistry, WORKFLOWS_RESOLVED_OPTIONS],
    };
  }
}

async function createStore(options: ResolvedWorkflowsOptions, moduleRef: ModuleRef): Promise<WorkflowStore> {
  const given = options.store;
  const store = given === undefined ? new InMemoryWorkflowStore() : typeof given === 'function' ? await moduleRef.create(given) : given;
  if (store instanceof InMemoryWorkflowStore && process.env.NODE_ENV === 'production' && !options.allowInMemoryStorage) {
    throw new Error(
      'WorkflowsModule is using the in-memory store with NODE_ENV=production: every running instance would be lost on restart. ' +
        'Configure a durable store (PostgresWorkflowStore from @nestjs/workflows/postgres), or set allowInMemoryStorage: true to accept that.',
    );
  }
  return store;
}
