import type { PayloadCodecChain } from '../codec/payload-codec-chain.js';
import type { SerializedWorkflowError } from './workflow-instance.js';

/**
 * Fields of a stored error that stay readable for operators: its class name, and the ids and names
 * the engine adds (a step's name, a child's id). Messages, stacks and any other field an error
 * carries (an application's `orderId`, a driver's `detail`) are user data and get encoded.
 */
const READABLE = new Set(['name', 'step', 'childId', 'instanceId']);
/** Fields that hold errors themselves: encoded the same way, field by field. */
const NESTED = new Set(['cause', 'compensation', 'childError']);

/** Encodes a stored error field by field, so its name (and the engine's own fields) stay readable. */
export async function encodeError(
  chain: PayloadCodecChain,
  error: SerializedWorkflowError,
): Promise<SerializedWorkflowError>;
export async function encodeError(
  chain: PayloadCodecChain,
  error: SerializedWorkflowError | null | undefined,
): Promise<SerializedWorkflowError | null | undefined>;
export async function encodeError(
  chain: PayloadCodecChain,
  error: SerializedWorkflowError | null | undefined,
): Promise<SerializedWorkflowError | null | undefined> {
  if (error === null || error === undefined || typeof error !== 'object') return error;
  const out: Record<string, unknown> = {};
  for (const [field, value] of Object.entries(error)) {
    if (READABLE.has(field)) out[field] = value;
    else if (NESTED.has(field) && isErrorLike(value)) out[field] = await encodeError(chain, value);
    else out[field] = await chain.encode(value);
  }
  return out as SerializedWorkflowError;
}

/**
 * Decodes what `encodeError` wrote (and, as they are, errors stored before a codec was configured).
 * `decode` is the chain's decode, or a lenient one that records what it couldn't read.
 */
export async function decodeError(
  decode: (stored: unknown, field: string) => Promise<unknown>,
  error: SerializedWorkflowError | null | undefined,
  field: string,
): Promise<SerializedWorkflowError | null | undefined> {
  if (error === null || error === undefined || typeof error !== 'object') return error;
  const out: Record<string, unknown> = {};
  for (const [name, value] of Object.entries(error)) {
    if (READABLE.has(name)) out[name] = value;
    else if (NESTED.has(name) && isErrorLike(value)) out[name] = await decodeError(decode, value, `${field}.${name}`);
    else out[name] = await decode(value, `${field}.${name}`);
  }
  return out as SerializedWorkflowError;
}

function isErrorLike(value: unknown): value is SerializedWorkflowError {
  return typeof value === 'object' && value !== null && typeof (value as { name?: unknown }).name === 'string';
}
