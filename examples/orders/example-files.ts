import { fileURLToPath } from 'node:url';

/**
 * Where the example keeps what outlives a run: the workflows' SQLite database (`ORDERS_DB`, default
 * `examples/orders/orders.sqlite`) and, beside it, the fake payment gateway's ledger (another system
 * with records of its own).
 */
export const DATABASE = process.env.ORDERS_DB ?? fileURLToPath(new URL('./orders.sqlite', import.meta.url));
export const LEDGER = `${DATABASE}.ledger`;
