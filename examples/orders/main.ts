// Order fulfilment on durable workflows: a retried charge, a durable sleep, a signal from the
// carrier, custom statuses, and a saga (a lost parcel times out the wait and the charge is refunded).
//
//   npm run example
//
// Exits 0 when every order ended as the example expects, 1 otherwise.
import 'reflect-metadata';
import { NestFactory } from '@nestjs/core';
import { WorkflowClient, WorkflowEvents, WorkflowSignalTimeoutError, type WorkflowEvent } from '@nestjs/workflows';
import { AppModule } from './app.module.js';
import { delivered, FulfilOrder, type FulfilOrderInput, type Receipt } from './fulfil-order.workflow.js';
import { PaymentsService } from './payments.service.js';

const orders: FulfilOrderInput[] = [
  { id: 'a-1001', customer: 'ada', amount: 42, deliveryWindow: '2s' },
  { id: 'a-1002', customer: 'grace', amount: 19.9, gatewayHiccups: 2, deliveryWindow: '2s' },
  // The carrier loses this parcel: no delivery signal ever comes.
  { id: 'a-1003', customer: 'linus', amount: 99, deliveryWindow: '1s' },
];
const lost = new Set(['a-1003']);

const t0 = Date.now();
const offset = (at: number) => `+${((at - t0) / 1000).toFixed(3)}s`;

async function main(): Promise<boolean> {
  const app = await NestFactory.createApplicationContext(AppModule, { logger: ['error', 'warn'] });
  const client = app.get(WorkflowClient);
  const payments = app.get(PaymentsService);
  const pending: Promise<unknown>[] = [];
  const duplicates: boolean[] = [];

  // Print one line per event, in order; a suspension also shows the custom status the workflow set.
  let printing = Promise.resolve();
  const subscription = app.get(WorkflowEvents).subscribe((event) => {
    printing = printing.then(async () => console.log(await describe(event, client)));
    // The carrier: delivers a parcel a moment after its order starts waiting for it.
    if (event.type === 'workflow-suspended') {
      const orderId = event.id.replace(/^order-/, '');
      const waiting = event.waits.some((w) => w.name === delivered.name && w.key === orderId);
      if (waiting && !lost.has(orderId)) pending.push(deliver(client, orderId, duplicates));
    }
  });

  console.log('Starting orders:');
  const handles = await Promise.all(
    orders.map((order) =>
      client.start(FulfilOrder, order, { id: `order-${order.id}`, concurrencyKey: order.customer }),
    ),
  );
  const outcomes = await Promise.allSettled(handles.map((handle) => handle.result({ timeout: '10s' })));
  await Promise.all(pending);
  await printing;
  subscription.unsubscribe();

  console.log('\nOutcomes:');
  const problems: string[] = [];
  for (const [index, order] of orders.entries()) {
    const outcome = outcomes[index]!;
    const status = await client.getStatus(`order-${order.id}`);
    const shown =
      outcome.status === 'fulfilled'
        ? `completed  ${JSON.stringify(outcome.value)}`
        : `${status.status.padEnd(9)}  ${(outcome.reason as Error).name}: ${(outcome.reason as Error).message}`;
    console.log(`  order-${order.id}  ${shown}\n    last custom status: ${JSON.stringify(status.customStatus)}`);
    problems.push(...check(order, outcome, status.customStatus, payments));
  }

  console.log('\nPayment ledger:');
  for (const line of payments.ledger) console.log(`  ${line}`);
  if (duplicates.some((created) => created)) problems.push('a repeated delivery signal (same id) was stored twice');
  if (duplicates.length !== orders.length - lost.size)
    problems.push(`expected ${orders.length - lost.size} repeated delivery signals, sent ${duplicates.length}`);

  await app.close();
  if (problems.length > 0) {
    console.error(`\nUnexpected outcome(s):\n  ${problems.join('\n  ')}`);
    return false;
  }
  console.log(`\nAll ${orders.length} orders ended as expected in ${offset(Date.now())}.`);
  return true;
}

/** The carrier's webhook, sent twice with the same id as webhooks often are: the repeat is stored once. */
async function deliver(client: WorkflowClient, orderId: string, duplicates: boolean[]): Promise<void> {
  await new Promise((resolve) => setTimeout(resolve, 100));
  const payload = { at: new Date().toISOString(), signedBy: 'front desk' };
  const first = await client.signal(delivered, payload, { key: orderId, id: `carrier-event-${orderId}` });
  const repeat = await client.signal(delivered, payload, { key: orderId, id: `carrier-event-${orderId}` });
  duplicates.push(repeat.created);
  console.log(
    `${offset(Date.now())}  ${'carrier'.padEnd(12)}  delivered ${orderId} (signal #${first.id}, woke ${first.woken}; repeat stored: ${repeat.created})`,
  );
}

/** One readable line for an event. */
async function describe(event: WorkflowEvent, client: WorkflowClient): Promise<string> {
  const head = `${offset(event.at)}  ${('id' in event ? event.id : event.scheduleId).padEnd(12)}  ${event.type.padEnd(22)}`;
  switch (event.type) {
    case 'step-completed':
      return `${head}${event.step} (attempt ${event.attempt})`;
    case 'step-retrying':
      return `${head}${event.step} attempt ${event.attempt} failed: ${event.error.message}; retry at ${offset(event.retryAt)}`;
    case 'step-failed':
      return `${head}${event.step} attempt ${event.attempt} failed for good: ${event.error.message}`;
    case 'workflow-resumed':
      return `${head}run ${event.run}`;
    case 'workflow-suspended': {
      const { customStatus } = await client.getStatus(event.id);
      const until = event.wakeAt === null ? 'a signal' : offset(event.wakeAt);
      const waits = event.waits.map((w) => `${w.name}[${w.key ?? ''}]`).join(', ');
      return `${head}until ${until}${waits ? ` or ${waits}` : ''}; status ${JSON.stringify(customStatus)}`;
    }
    case 'workflow-completed':
      return `${head}${JSON.stringify(event.output)}`;
    case 'workflow-compensating':
      return `${head}undoing completed steps after ${event.error.name}`;
    case 'workflow-failed':
    case 'workflow-cancelled':
    case 'workflow-compensation-failed':
      return `${head}${event.error.name}: ${event.error.message}`;
    case 'journal-large':
      return `${head}${event.entries} entries, ${event.bytes} bytes`;
    default:
      return head.trimEnd();
  }
}

/** What the example expects of each order. */
function check(
  order: FulfilOrderInput,
  outcome: PromiseSettledResult<Receipt>,
  customStatus: unknown,
  payments: PaymentsService,
): string[] {
  const problems: string[] = [];
  const stage = (customStatus as { stage?: string } | null)?.stage;
  const attempts = payments.chargeAttempts(order.id);
  if (attempts !== (order.gatewayHiccups ?? 0) + 1)
    problems.push(`${order.id}: ${attempts} charge attempts, expected ${(order.gatewayHiccups ?? 0) + 1}`);
  const refunded = payments.refunds().filter((line) => line.includes(`ch_${order.id} `));
  if (lost.has(order.id)) {
    if (outcome.status === 'fulfilled') problems.push(`${order.id}: completed, but its parcel was lost`);
    else if (!(outcome.reason instanceof WorkflowSignalTimeoutError))
      problems.push(`${order.id}: failed with ${String(outcome.reason)}, expected WorkflowSignalTimeoutError`);
    if (refunded.length !== 1) problems.push(`${order.id}: refunded ${refunded.length} times, expected once`);
    if (stage !== 'awaiting-delivery')
      problems.push(`${order.id}: last stage ${String(stage)}, expected awaiting-delivery`);
  } else {
    if (outcome.status === 'rejected') problems.push(`${order.id}: failed: ${String(outcome.reason)}`);
    else if (outcome.value.chargeId !== `ch_${order.id}` || outcome.value.signedBy !== 'front desk')
      problems.push(`${order.id}: unexpected receipt ${JSON.stringify(outcome.value)}`);
    if (refunded.length !== 0) problems.push(`${order.id}: refunded, but it was delivered`);
    if (stage !== 'delivered') problems.push(`${order.id}: last stage ${String(stage)}, expected delivered`);
  }
  return problems;
}

const watchdog = setTimeout(() => {
  console.error('The example did not finish within 8 s.');
  process.exit(1);
}, 8_000);
watchdog.unref();

main().then(
  (ok) => {
    process.exitCode = ok ? 0 : 1;
  },
  (error: unknown) => {
    console.error(error);
    process.exitCode = 1;
  },
);
