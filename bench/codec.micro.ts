// The codec layer's own cost, away from the database: what WorkflowStorage adds to one W1/W2
// workflow (a 3-step workflow started locally: the input on create, each step's result on its write,
// the output on the last write) with AesGcmPayloadCodec, and the reads back (getStatus with its
// journal). Run: `node --import ./scripts/register-ts.mjs bench/codec.micro.ts`.
import { randomBytes } from 'node:crypto';
import { AesGcmPayloadCodec } from '../src/codec/aes-gcm-payload.codec.js';
import { PayloadCodecChain } from '../src/codec/payload-codec-chain.js';
import { PayloadEncoding } from '../src/storage/payload-encoding.js';
import type { WorkflowInstanceDetails } from '../src/storage/workflow-store.js';

const ROUNDS = Number(process.env.ROUNDS ?? 20_000);
const encoding = new PayloadEncoding(
  new PayloadCodecChain({
    codecs: [new AesGcmPayloadCodec({ key: randomBytes(32), id: 'bench' })],
    allowUnencoded: true,
  }),
);
const now = Date.now();
const entry = (step: number, i: number) => ({
  name: `step-${step}`,
  kind: 'step' as const,
  state: 'completed' as const,
  value: { i, step },
  attempts: 1,
  createdAt: now,
  updatedAt: now,
});

/** The writes of one workflow, encoded as WorkflowStorage encodes them. */
async function oneWorkflow(i: number): Promise<WorkflowInstanceDetails> {
  const created = await encoding.newInstance({
    id: `w-${i}`,
    workflow: 'bench.three-steps',
    version: 1,
    input: i,
    deadline: null,
    now,
  });
  const entries = [];
  for (let step = 1; step <= 3; step++)
    entries.push(...(await encoding.write({ now, entries: [entry(step, i)] })).entries);
  const last = await encoding.write({
    now,
    entries: [],
    status: 'completed',
    output: [
      { i, step: 1 },
      { i, step: 2 },
      { i, step: 3 },
    ],
  });
  return {
    id: created.id,
    workflow: created.workflow,
    version: 1,
    status: 'completed',
    input: created.input,
    output: last.output,
    error: null,
    customStatus: null,
    parentId: null,
    parentClose: null,
    concurrencyKey: null,
    rateLimitKey: null,
    priority: 0,
    scheduleId: null,
    scheduledAt: null,
    deadline: null,
    timeout: null,
    wakeAt: null,
    runs: 1,
    signalCursor: 0,
    leaseToken: null,
    leaseOwner: null,
    leaseUntil: null,
    cancelRequested: false,
    terminateRequested: false,
    cancelReason: null,
    traceContext: null,
    createdAt: now,
    updatedAt: now,
    waits: [],
    journal: entries,
  };
}

async function measure(label: string, fn: (i: number) => Promise<unknown>): Promise<number> {
  for (let i = 0; i < 2_000; i++) await fn(i);
  const started = process.hrtime.bigint();
  for (let i = 0; i < ROUNDS; i++) await fn(i);
  const micros = Number(process.hrtime.bigint() - started) / 1000 / ROUNDS;
  console.log(`${label}: ${micros.toFixed(1)} µs`);
  return micros;
}

const sample = await oneWorkflow(1);
const write = await measure('encode one workflow (input, 3 step results, output)', oneWorkflow);
const read = await measure('decode it back (getStatus with journal)', () => encoding.details(sample));
console.log(
  JSON.stringify({
    rounds: ROUNDS,
    encode_us_per_workflow: +write.toFixed(1),
    decode_us_per_workflow: +read.toFixed(1),
  }),
);
