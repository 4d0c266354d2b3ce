/**
 * --server-tls verify-ca and verify-full, as libpq's sslmode: the replica's certificate must chain
 * to the --server-ca file; verify-full also needs the host the proxy dials (a name, or an IP
 * address checked against the certificate's IP entries) in the certificate. One home for these TLS
 * options: the sessions' replica connections (tls-server.ts) and the health checks (node-postgres,
 * verifiedConnector) verify alike.
 */
import { readFileSync } from 'node:fs';
import { isIP } from 'node:net';
import { checkServerIdentity, type ConnectionOptions } from 'node:tls';
import type { Connector } from '../../cluster/connector.js';
import type { Endpoint } from '../../core/endpoint.js';
import { PlbError } from '../../core/errors.js';

export type ServerTlsMode = 'disable' | 'prefer' | 'require' | 'verify-ca' | 'verify-full';
const SERVER_TLS_MODES: readonly ServerTlsMode[] = [
  'disable',
  'prefer',
  'require',
  'verify-ca',
  'verify-full',
];

/** Checks --server-tls (libpq's sslmode words but allow: allow is prefer's plain-first twin). */
export function parseServerTls(value: string | undefined): ServerTlsMode {
  const v = (value ?? 'disable').trim().toLowerCase();
  if ((SERVER_TLS_MODES as readonly string[]).includes(v)) return v as ServerTlsMode;
  throw new PlbError(
    'BAD_INPUT',
    `--server-tls: must be disable, prefer, require, verify-ca or verify-full (got "${value}")`,
  );
}

type VerifyMode = 'verify-ca' | 'verify-full';

function verifies(mode: ServerTlsMode): mode is VerifyMode {
  return mode === 'verify-ca' || mode === 'verify-full';
}

/** Reads --server-ca (PEM, one or more certificates); one line naming the flag when it cannot. */
export function loadServerCa(file: string | undefined, mode: ServerTlsMode): Buffer | undefined {
  if (file === undefined) {
    if (verifies(mode))
      throw new PlbError('BAD_INPUT', `--server-tls ${mode}: needs --server-ca (the CA's PEM file)`);
    return undefined;
  }
  if (!verifies(mode))
    throw new PlbError(
      'BAD_INPUT',
      `--server-ca: only with --server-tls verify-ca or verify-full (got ${mode})`,
    );
  let pem: Buffer;
  try {
    pem = readFileSync(file);
  } catch (err) {
    const e = err as NodeJS.ErrnoException;
    throw new PlbError('BAD_INPUT', `--server-ca: cannot read ${file} (${e.code ?? e.message})`, {
      cause: err,
    });
  }
  if (!pem.includes('-----BEGIN CERTIFICATE-----'))
    throw new PlbError('BAD_INPUT', `--server-ca: ${file} holds no PEM certificate`);
  return pem;
}

/** Node's TLS options for a replica at `host` (require/prefer: encrypted, not verified). */
export function serverTlsOptions(
  mode: ServerTlsMode,
  ca: Buffer | undefined,
  host: string,
): ConnectionOptions {
  if (!verifies(mode)) return { rejectUnauthorized: false };
  if (ca === undefined) throw new PlbError('INTERNAL', `--server-tls ${mode} without a CA`);
  return {
    rejectUnauthorized: true,
    ca,
    ...(isIP(host) === 0 ? { servername: host } : {}),
    // Checked against the host dialled, whatever Node would take as the name (pg passes none for an IP).
    checkServerIdentity:
      mode === 'verify-full' ? (_name, cert) => checkServerIdentity(host, cert) : () => undefined,
  };
}

/** The TLS options of the proxy's own node-postgres connections to `host` (undefined: plain TCP, as before). */
export function checkTls(
  mode: ServerTlsMode,
  ca: Buffer | undefined,
  host: string,
): ConnectionOptions | undefined {
  return verifies(mode) ? serverTlsOptions(mode, ca, host) : undefined;
}

/** OpenSSL's chain errors and Node's name error: the certificate, not the connection, failed. */
const VERIFY_CODES = /CERT|SIGNATURE|ALTNAME|INVALID_CA|HOSTNAME|PURPOSE|PATH_LENGTH|ISSUER/;

/** A TLS error said as a verification failure when it is one (code ETLSVERIFY), else as it came. */
export function verifyFailure(err: Error, mode: ServerTlsMode, host: string): Error {
  const code = (err as { code?: unknown }).code;
  if (!verifies(mode) || typeof code !== 'string' || !VERIFY_CODES.test(code)) return err;
  return Object.assign(
    new Error(`certificate of ${host} failed verification (--server-tls ${mode}): ${err.message} (${code})`),
    { code: 'ETLSVERIFY', cause: err },
  );
}

/**
 * The health checks' connector with the sessions' verification (verify-ca/verify-full); the
 * connector as it is otherwise (the checks of disable/prefer/require go in plain TCP, as before).
 */
export function verifiedConnector(
  inner: Connector,
  replicas: readonly Endpoint[],
  mode: ServerTlsMode,
  ca: Buffer | undefined,
): Connector {
  if (!verifies(mode)) return inner;
  const hosts = new Map(replicas.map((r) => [r.id, r.host] as const));
  return {
    open: async (server, opts) => {
      const host = hosts.get(server) ?? server;
      try {
        return await inner.open(server, { ...opts, ssl: checkTls(mode, ca, host) });
      } catch (err) {
        throw err instanceof Error ? verifyFailure(err, mode, host) : err;
      }
    },
  };
}
