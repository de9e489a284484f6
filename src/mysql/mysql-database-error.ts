import { findInErrorChain } from '../errors/driver-error-chain.js';

/** A PostgreSQL SQLSTATE (`42601`, `42P01`): five characters, at least one a digit (never Node's `EPIPE`, nor Prisma's `P2010`). */
const SQLSTATE = /^(?!P)(?=.*\d)[0-9A-Z]{5}$/;

/**
 * The database's error, wherever the library put it (see `findInErrorChain`): `errno` (mysql2,
 * mariadb; TypeORM copies it), Prisma's driver adapter `originalCode` (the error number), and
 * PostgreSQL's `code` (a five-character SQLSTATE, for a handle on the wrong server).
 */
export function databaseError(
  error: unknown,
): { errno: number | null; sqlState: string | null; message: string } | null {
  return (
    findInErrorChain(error, (fields) => {
      const { errno, code, originalCode, originalMessage } = fields;
      const message = String(fields.message ?? '').split('\n')[0]!;
      if (typeof errno === 'number' && errno > 0) return { errno, sqlState: null, message };
      if (typeof originalCode === 'string' && /^\d+$/.test(originalCode))
        return { errno: Number(originalCode), sqlState: null, message: String(originalMessage ?? message) };
      if (typeof code === 'string' && SQLSTATE.test(code)) return { errno: null, sqlState: code, message };
      return undefined;
    }) ?? null
  );
}
