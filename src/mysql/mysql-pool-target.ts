/**
 * Where a mysql2 pool connects, as `host:port database db`, for messages (never the user or the
 * password): from the connection options mysql2 keeps on its pool (parsed from `uri` too), else
 * mysql2's defaults. `undefined` for an object that isn't a mysql2 pool.
 */
export function mysqlPoolTarget(pool: unknown): string | undefined {
  const config = (pool as { pool?: { config?: { connectionConfig?: Record<string, unknown> } } }).pool?.config
    ?.connectionConfig;
  if (!config) return undefined;
  const socket = typeof config.socketPath === 'string' && config.socketPath ? config.socketPath : undefined;
  const host = typeof config.host === 'string' && config.host ? config.host : 'localhost';
  const port = typeof config.port === 'number' || typeof config.port === 'string' ? String(config.port) : '3306';
  const database = typeof config.database === 'string' && config.database ? ` database ${config.database}` : '';
  return `${socket ?? `${host}:${port}`}${database}`;
}
