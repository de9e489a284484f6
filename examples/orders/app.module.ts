import { Module } from '@nestjs/common';
import { WorkflowsModule } from '@nestjs/workflows';
import { FulfilOrder } from './fulfil-order.workflow.js';
import { PaymentsService } from './payments.service.js';

/**
 * The example application: the in-memory store (the default; use PostgresWorkflowStore for real),
 * the system clock, and a background worker that polls often so the short timers of the example
 * fire promptly.
 */
@Module({
  imports: [WorkflowsModule.forRoot({ worker: { pollInterval: '20ms' } })],
  providers: [PaymentsService, FulfilOrder],
})
export class AppModule {}
