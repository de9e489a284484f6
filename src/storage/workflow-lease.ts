/**
 * A lease on an instance (or a schedule): who holds it, the fencing token every write under it
 * presents, and until when it holds without a renewal (epoch ms). One shape for the leased loop
 * that grants it, the engine that writes under it, the client that creates an instance already
 * leased (a local start) and the store that records it.
 */
export interface WorkflowLease {
  owner: string;
  token: string;
  leaseUntil: number;
}
