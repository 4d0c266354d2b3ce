/**
 * How a person connects to a cluster plb made: user, database, the password file and, per server,
 * a libpq URI and a psql line to paste. The password itself is never printed: the psql line reads
 * it from the file when it runs.
 */
import type { Endpoint } from '../core/endpoint.js';
import { passwordFile, PLB_DATABASE, PLB_USER } from './state.js';

interface ServerConnect {
  id: string;
  kind: 'primary' | 'replica';
  host: string;
  port: number;
  /** libpq URI without the password: postgresql://plb@127.0.0.1:25433/plb */
  dsn: string;
  /** A shell line that connects: PGPASSWORD="$(cat <file>)" psql "host=... port=... user=... dbname=..." */
  psql: string;
}

export interface ConnectInfo {
  user: string;
  database: string;
  /** The cluster's password (mode 0600); `plb cluster down` removes it with the cluster. */
  passwordFile: string;
  servers: ServerConnect[];
}

const SAFE = /^[A-Za-z0-9_./:@%+=,-]+$/;

/** One shell word: as is when it needs no quoting, else single-quoted. */
export function shellWord(s: string): string {
  return SAFE.test(s) ? s : `'${s.replaceAll("'", `'\\''`)}'`;
}

/** The psql line for one address: reads the password from the file as it runs. */
export function psqlLine(
  file: string,
  host: string,
  port: number,
  user = PLB_USER,
  database = PLB_DATABASE,
): string {
  return `PGPASSWORD="$(cat ${shellWord(file)})" psql "host=${host} port=${port} user=${user} dbname=${database}"`;
}

export function dsn(host: string, port: number, user = PLB_USER, database = PLB_DATABASE): string {
  const h = host.includes(':') ? `[${host}]` : host;
  return `postgresql://${encodeURIComponent(user)}@${h}:${port}/${encodeURIComponent(database)}`;
}

/** Connection details of a cluster recorded in stateDir under name, for its endpoints. */
export function connectInfo(stateDir: string, name: string, endpoints: readonly Endpoint[]): ConnectInfo {
  const file = passwordFile(stateDir, name);
  return {
    user: PLB_USER,
    database: PLB_DATABASE,
    passwordFile: file,
    servers: endpoints.map((e) => ({
      id: e.id,
      kind: e.kind,
      host: e.host,
      port: e.port,
      dsn: dsn(e.host, e.port),
      psql: psqlLine(file, e.host, e.port),
    })),
  };
}

/** Where a client reaches a listener bound to `host`: a wildcard bind is reached on loopback. */
export function clientHost(host: string): string {
  return host === '0.0.0.0' || host === '::' || host === '' ? '127.0.0.1' : host;
}
