import { Module } from '@nestjs/common';
import { WorkflowsModule } from '@nestjs/workflows';
import { SqliteWorkflowStore } from '@nestjs/workflows/sqlite';
import { DATABASE } from './example-files.js';
import { FulfilOrder } from './fulfil-order.workflow.js';
import { PaymentsService } from './payments.service.js';

/**
 * The example application: a SQLite file as the store (durable, no server: stop the example in the
 * middle and run it again, and the orders carry on where they were), the system clock, and a
 * background worker that polls often so the short timers of the example fire promptly. Its leases
 * are short too: what a killed run held is taken over within two seconds of the next start.
 */
@Module({
  imports: [
    WorkflowsModule.forRoot({
      store: new SqliteWorkflowStore({ path: DATABASE }),
      worker: { pollInterval: '20ms', leaseDuration: '2s' },
    }),
  ],
  providers: [PaymentsService, FulfilOrder],
})
export class AppModule {}
