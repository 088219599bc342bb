/**
 * Start-up problems the operator solves, each said in one line naming what to change, instead of
 * a stack trace (or, for a busy port, instead of a stack trace after a whole PostgreSQL started).
 */
import { createServer } from 'node:net';

/** In development loadConfig keeps generated secrets in DATA_DIR: one it cannot write is a set-up problem. */
export function unwritableDataDir(error: unknown): string | null {
  const code = errorCode(error);
  if (!code || !['EACCES', 'EPERM', 'EROFS', 'ENOENT', 'ENOTDIR'].includes(code)) return null;
  return `invalid configuration: DATA_DIR cannot hold the generated secrets (${(error as Error).message}): set DATA_DIR to a folder this user can write`;
}

/** Codes of a HOST that names no address of this machine (a typo, `host:port`, another machine's address). */
const NOT_AN_ADDRESS_HERE = new Set(['EADDRNOTAVAIL', 'ENOTFOUND', 'EAI_AGAIN', 'EAI_FAIL', 'EAI_NONAME', 'EAI_NODATA']);

/**
 * Tries to bind `host:port` and lets it go at once; says why when it cannot be bound, naming what to
 * change: HOST when it is not an address of this machine (also with PORT=0, which is always free),
 * PORT when the port is taken or privileged.
 */
export function portInUse(host: string, port: number): Promise<string | null> {
  return new Promise((resolve) => {
    const probe = createServer();
    probe.once('error', (error: NodeJS.ErrnoException) => {
      if (error.code && NOT_AN_ADDRESS_HERE.has(error.code)) {
        resolve(`invalid configuration: HOST ${host} is not an address of this machine (${error.code}): set HOST to one of its addresses (0.0.0.0 listens on all)`);
        return;
      }
      const why = error.code === 'EADDRINUSE' ? 'is in use' : error.code === 'EACCES' ? 'needs privileges this user lacks' : `cannot be bound (${error.code ?? error.message})`;
      resolve(`port ${port} on ${host} ${why}: stop what uses it, or set PORT to a free port (PORT=0 picks one)`);
    });
    probe.listen({ port, host, exclusive: true }, () => probe.close(() => resolve(null)));
  });
}

/** Codes of a database that cannot be reached or refuses us: the connection string is what to fix. */
const CONNECTION_CODES = new Set([
  'ECONNREFUSED',
  'ENOTFOUND',
  'EAI_AGAIN',
  'ETIMEDOUT',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'ECONNRESET',
  '28P01', // password authentication failed
  '28000', // no pg_hba.conf entry / role not permitted
  '3D000', // database does not exist
]);

/** One line naming DATABASE_URL (host and database only: never its password) when it could not be used. */
export function unreachableDatabase(error: unknown, databaseUrl: string | null): string | null {
  if (!databaseUrl) return null;
  const code = errorCode(error);
  // pg's own connection failures carry no code: its connect timeout, or a peer that hung up.
  const dropped = /^Connection terminated|timeout expired/.test(firstLine(error));
  if (!(code && CONNECTION_CODES.has(code)) && !dropped) return null;
  const reason = code && !firstLine(error).includes(code) ? `${code} ${firstLine(error)}` : firstLine(error);
  return `cannot use the database at DATABASE_URL (${where(databaseUrl)}): ${reason}: check DATABASE_URL, or unset it to use the embedded PostgreSQL`;
}

function where(databaseUrl: string): string {
  try {
    const url = new URL(databaseUrl);
    return `${url.hostname}:${url.port || 5432}${url.pathname}`;
  } catch {
    return 'not a valid URL';
  }
}

/** The code of an error, of its cause, or of the first of an AggregateError's (localhost tries ::1, then 127.0.0.1). */
function errorCode(error: unknown): string | undefined {
  for (let e: unknown = error, depth = 0; e && depth < 5; depth++) {
    const { code, cause, errors } = e as { code?: unknown; cause?: unknown; errors?: unknown[] };
    if (typeof code === 'string') return code;
    e = cause ?? errors?.[0];
  }
  return undefined;
}

function firstLine(error: unknown): string {
  const message = error instanceof Error ? error.message || (error as AggregateError).errors?.[0]?.message || '' : String(error);
  return message.split('\n')[0]!;
}
