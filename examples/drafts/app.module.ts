import { Module } from '@nestjs/common';
import { WorkflowCallbacksModule, WorkflowsModule } from '@nestjs/workflows';
import { SqliteWorkflowStore } from '@nestjs/workflows/sqlite';
import { DraftsController } from './drafts.controller.js';
import { FakeModel, WriteDraft } from './draft.workflow.js';

/** The drafts app on a SQLite file (`DRAFTS_DB`, default `drafts.sqlite` here). */
@Module({
  imports: [
    WorkflowsModule.forRoot({
      store: new SqliteWorkflowStore({ path: process.env.DRAFTS_DB ?? 'examples/drafts/drafts.sqlite' }),
      worker: { pollInterval: '200ms' },
    }),
    // POST /approvals/:token completes the approval (a webhook would call it the same way).
    WorkflowCallbacksModule.forRoot({ path: 'approvals' }),
  ],
  controllers: [DraftsController],
  providers: [FakeModel, WriteDraft],
})
export class AppModule {}
