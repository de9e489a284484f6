// Order fulfilment on durable workflows: a retried charge, a durable sleep, a signal from the
// carrier, custom statuses, and a saga (a lost parcel times out the wait and the charge is refunded).
// The workflows live in a SQLite file: stop the example in the middle (Ctrl-C, or kill -9) and run
// it again, and each order carries on where it was.
//
//   npm run example               (again after a stop: carries on; after a finished run: starts over)
//   npm run example -- --fresh    (forgets the earlier runs first)
//
// Exits 0 when every order ended as the example expects, 1 otherwise.
import 'reflect-metadata';
import { rmSync } from 'node:fs';
import { NestFactory } from '@nestjs/core';
import {
  WorkflowClient,
  WorkflowEvents,
  WorkflowNotFoundError,
  WorkflowSignalTimeoutError,
  type WorkflowEvent,
  type WorkflowInstanceDetails,
} from '@nestjs/workflows';
import { AppModule } from './app.module.js';
import { DATABASE, LEDGER } from './example-files.js';
import { delivered, FulfilOrder, type FulfilOrderInput, type Receipt } from './fulfil-order.workflow.js';
import { PaymentsService } from './payments.service.js';

const orders: FulfilOrderInput[] = [
  // Windows count on while the example is stopped, as every durable timer does: long enough here
  // that a stop and a rerun still see the parcels delivered.
  { id: 'a-1001', customer: 'ada', amount: 42, deliveryWindow: '1m' },
  { id: 'a-1002', customer: 'grace', amount: 19.9, gatewayHiccups: 2, deliveryWindow: '1m' },
  // The carrier loses this parcel: no delivery signal ever comes.
  { id: 'a-1003', customer: 'linus', amount: 99, deliveryWindow: '1s' },
];
const lost = new Set(['a-1003']);

const t0 = Date.now();
const offset = (at: number) => `+${((at - t0) / 1000).toFixed(3)}s`;

const FINISHED = new Set(['completed', 'failed', 'cancelled', 'compensation_failed']);

async function main(): Promise<boolean> {
  if (process.argv.includes('--fresh')) {
    for (const file of [DATABASE, `${DATABASE}-wal`, `${DATABASE}-shm`, LEDGER]) rmSync(file, { force: true });
  }
  const app = await NestFactory.createApplicationContext(AppModule, { logger: ['error', 'warn'] });
  const client = app.get(WorkflowClient);
  const payments = app.get(PaymentsService);
  const pending: Promise<unknown>[] = [];
  const duplicates: boolean[] = [];

  // What an earlier run left: nothing, orders half way (a run stopped in the middle), or all done.
  const earlier = await Promise.all(orders.map((order) => stored(client, `order-${order.id}`)));
  if (earlier.every((instance) => instance !== null && FINISHED.has(instance.status))) {
    console.log(`The last run finished every order; starting over (${DATABASE}).`);
    for (const order of orders) await client.delete(`order-${order.id}`);
    rmSync(LEDGER, { force: true });
    earlier.fill(null);
  }
  const resumed = earlier.some((instance) => instance !== null);

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

  if (resumed) {
    console.log(`Carrying on from the last run (${DATABASE}):`);
    for (const [index, order] of orders.entries()) console.log(`  order-${order.id}  stage ${stageOf(earlier[index])}`);
  } else {
    console.log(`Starting orders (${DATABASE}):`);
  }
  // Idempotent: an order the last run started is the same instance, running on from its journal.
  const handles = await Promise.all(
    orders.map((order) =>
      client.start(FulfilOrder, order, { id: `order-${order.id}`, concurrencyKey: order.customer }),
    ),
  );
  // A parcel shipped before the last run stopped: the carrier delivers it now (a signal sent before
  // the order waits for it is kept for the wait).
  for (const [index, order] of orders.entries()) {
    if (!lost.has(order.id) && stageOf(earlier[index]) === 'awaiting-delivery')
      pending.push(deliver(client, order.id, duplicates));
  }
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
    problems.push(...check(order, outcome, status.customStatus, payments, resumed));
  }

  console.log('\nPayment ledger:');
  for (const line of payments.ledger) console.log(`  ${line}`);
  if (duplicates.some((created) => created)) problems.push('a repeated delivery signal (same id) was stored twice');

  await app.close();
  if (problems.length > 0) {
    console.error(`\nUnexpected outcome(s):\n  ${problems.join('\n  ')}`);
    return false;
  }
  console.log(`\nAll ${orders.length} orders ended as expected in ${offset(Date.now())}.`);
  return true;
}

/** The stage an order's workflow last reported (`ctx.setStatus()`), or `-`. */
function stageOf(instance: WorkflowInstanceDetails | null | undefined): string {
  return (instance?.customStatus as { stage?: string } | null | undefined)?.stage ?? '-';
}

/** The instance `id` as the store holds it, or `null`. */
async function stored(client: WorkflowClient, id: string): Promise<WorkflowInstanceDetails | null> {
  try {
    return await client.getStatus(id);
  } catch (error) {
    if (error instanceof WorkflowNotFoundError) return null;
    throw error;
  }
}

/** The carrier's webhook, sent twice with the same id as webhooks often are: the repeat is stored once. */
async function deliver(client: WorkflowClient, orderId: string, duplicates: boolean[]): Promise<void> {
  await new Promise((resolve) => setTimeout(resolve, 100));
  const payload = { at: new Date().toISOString(), signedBy: 'front desk' };
  // One event per parcel: an order started over (after a finished run) ships a new parcel.
  const { createdAt } = await client.getStatus(`order-${orderId}`);
  const id = `carrier-event-${orderId}-${createdAt}`;
  const first = await client.signal(delivered, payload, { key: orderId, id });
  const repeat = await client.signal(delivered, payload, { key: orderId, id });
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

/**
 * What the example expects of each order. After a stop in the middle (`resumed`), a charge or a
 * refund the stop cut short may have reached the gateway twice (steps run at least once; their
 * results are recorded once), so those are counted as at least once.
 */
function check(
  order: FulfilOrderInput,
  outcome: PromiseSettledResult<Receipt>,
  customStatus: unknown,
  payments: PaymentsService,
  resumed: boolean,
): string[] {
  const problems: string[] = [];
  const stage = (customStatus as { stage?: string } | null)?.stage;
  const expected = (order.gatewayHiccups ?? 0) + 1;
  const attempts = payments.chargeAttempts(order.id);
  if (resumed ? attempts < expected : attempts !== expected)
    problems.push(`${order.id}: ${attempts} charge attempts, expected ${resumed ? 'at least ' : ''}${expected}`);
  const refunded = payments.refunds().filter((line) => line.includes(`ch_${order.id} `));
  if (lost.has(order.id)) {
    if (outcome.status === 'fulfilled') problems.push(`${order.id}: completed, but its parcel was lost`);
    else if (!(outcome.reason instanceof WorkflowSignalTimeoutError))
      problems.push(`${order.id}: failed with ${String(outcome.reason)}, expected WorkflowSignalTimeoutError`);
    if (resumed ? refunded.length < 1 : refunded.length !== 1)
      problems.push(`${order.id}: refunded ${refunded.length} times, expected ${resumed ? 'at least ' : ''}once`);
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
