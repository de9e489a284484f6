import { Body, Controller, Get, Header, Headers, Param, Post, Sse } from '@nestjs/common';
import { afterLastEventId, toServerSentEvents, WorkflowClient } from '@nestjs/workflows';
import { WriteDraft } from './draft.workflow.js';
import { PAGE } from './page.js';

/** The example's HTTP API: start a draft, follow its words over SSE, read its result. */
@Controller()
export class DraftsController {
  constructor(private readonly client: WorkflowClient) {}

  @Get()
  @Header('content-type', 'text/html; charset=utf-8')
  page(): string {
    return PAGE;
  }

  @Post('drafts')
  async start(@Body() body: { topic?: string; delay?: number } | undefined) {
    const handle = await this.client.start(WriteDraft, { topic: body?.topic ?? 'checkout', delay: body?.delay });
    return { id: handle.id };
  }

  @Sse('drafts/:id/out')
  out(@Param('id') id: string, @Headers('last-event-id') last?: string) {
    return toServerSentEvents(this.client.readStream(id, 'out', { after: afterLastEventId(last) }));
  }

  @Get('drafts/:id')
  async status(@Param('id') id: string) {
    const { status, output } = await this.client.getStatus(id);
    return { status, output };
  }
}
