/**
 * TLS between the client and the proxy (`sslmode=require` and up): the proxy answers an SSLRequest
 * with 'S' and, from the next byte on, the client's socket is a TLS server socket over it. The
 * session goes on reading its startup packet from the decrypted stream; the replica side is plain
 * TCP on loopback. Certificate and key are read once at start (--tls-cert, --tls-key).
 */
import { readFileSync } from 'node:fs';
import type { Socket } from 'node:net';
import { createSecureContext, TLSSocket, type SecureContext } from 'node:tls';
import { PlbError } from '../../core/errors.js';

/** The secure context of --tls-cert and --tls-key (both or neither); undefined without them. */
export function loadTls(
  certFile: string | undefined,
  keyFile: string | undefined,
): SecureContext | undefined {
  if (certFile === undefined && keyFile === undefined) return undefined;
  if (certFile === undefined || keyFile === undefined)
    throw new PlbError(
      'BAD_INPUT',
      `--${certFile === undefined ? 'tls-cert' : 'tls-key'}: needed with --${certFile === undefined ? 'tls-key' : 'tls-cert'}`,
    );
  const read = (flag: string, file: string): Buffer => {
    try {
      return readFileSync(file);
    } catch (err) {
      throw new PlbError(
        'BAD_INPUT',
        `--${flag}: cannot read ${file} (${(err as NodeJS.ErrnoException).code ?? String(err)})`,
      );
    }
  };
  const cert = read('tls-cert', certFile);
  const key = read('tls-key', keyFile);
  try {
    return createSecureContext({ cert, key, minVersion: 'TLSv1.2' });
  } catch (err) {
    throw new PlbError(
      'BAD_INPUT',
      `--tls-cert/--tls-key: not a usable certificate and key (${err instanceof Error ? err.message : String(err)})`,
    );
  }
}

/** Moves the session onto a TLS socket over the client's raw one. */
export function upgradeClient(
  session: { useClientSocket(s: Socket): void },
  raw: Socket,
  secureContext: SecureContext,
): void {
  raw.removeAllListeners('data');
  raw.removeAllListeners('close');
  const tls = new TLSSocket(raw, { isServer: true, secureContext });
  session.useClientSocket(tls);
}
