/**
 * What a server allows in connections (max_connections and the slots it keeps for superusers and
 * reserved roles), read from the server itself: `plb proxy` sizes its per-replica admission limits
 * from it.
 */
import type { Credentials, Endpoint } from '../core/endpoint.js';
import { PlbError } from '../core/errors.js';
import type { ConnectionOptions } from 'node:tls';
import { openPgClient, pgConnection } from './connector.js';

export interface ConnectionSettings {
  maxConnections: number;
  superuserReserved: number;
  /** reserved_connections (PostgreSQL 16 and later; 0 before). */
  reserved: number;
}

const SETTINGS_SQL =
  "SELECT name, setting FROM pg_settings WHERE name IN ('max_connections', 'superuser_reserved_connections', 'reserved_connections')";

/** The settings of one pg_settings answer; a server without max_connections there is an error. */
export function settingsOfRows(rows: readonly { name: string; setting: string }[]): ConnectionSettings {
  const get = (name: string): number | undefined => {
    const row = rows.find((r) => r.name === name);
    const n = row === undefined ? undefined : Number(row.setting);
    return n !== undefined && Number.isInteger(n) && n >= 0 ? n : undefined;
  };
  const maxConnections = get('max_connections');
  if (maxConnections === undefined)
    throw new PlbError('INTERNAL', 'the server did not report max_connections in pg_settings');
  return {
    maxConnections,
    superuserReserved: get('superuser_reserved_connections') ?? 0,
    reserved: get('reserved_connections') ?? 0,
  };
}

/** Reads one server's settings over a connection of its own, closed at once. */
export async function readConnectionSettings(
  endpoint: Endpoint,
  creds: Credentials,
  timeoutMs: number,
  ssl?: ConnectionOptions,
): Promise<ConnectionSettings> {
  const client = await openPgClient(endpoint, creds, {
    ssl,
    connectTimeoutMs: timeoutMs,
    queryTimeoutMs: timeoutMs,
    applicationName: 'plb-health',
    onError: () => undefined,
  });
  try {
    const res = await client.query<{ name: string; setting: string }>(SETTINGS_SQL);
    return settingsOfRows(res.rows);
  } finally {
    await pgConnection(client).end(0);
  }
}
