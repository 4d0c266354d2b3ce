/**
 * TLS between the proxy and a replica (--server-tls), as libpq's sslmode does it: an SSLRequest on
 * the fresh TCP connection; the server's one-byte answer says whether it speaks TLS ('S') or not
 * ('N'). disable: never asked (the default, as before). prefer: TLS when the server offers it,
 * plain otherwise. require: TLS or the session fails, the certificate not verified (an encrypted
 * leg, not the replica's identity). verify-ca and verify-full: require, and the certificate checked
 * against --server-ca (and the host name), server-verify.ts.
 */
import type { Socket } from 'node:net';
import { connect as tlsConnect } from 'node:tls';
import { SSL_REQUEST_CODE } from './startup-packet.js';
import { serverTlsOptions, verifyFailure, type ServerTlsMode } from './server-verify.js';

// The mode's words live with their verification (server-verify.ts); said here too, as before.
export { parseServerTls, type ServerTlsMode } from './server-verify.js';

/** What verify-ca/verify-full check against: the CA and the host dialled. */
export interface ServerVerify {
  ca: Buffer | undefined;
  host: string;
}

const SSL_REQUEST = ((): Buffer => {
  const b = Buffer.alloc(8);
  b.writeInt32BE(8, 0);
  b.writeInt32BE(SSL_REQUEST_CODE, 4);
  return b;
})();

/**
 * Negotiates TLS on a connected socket (read by 'data' events, not onread: a TLS socket takes the
 * handle over). Resolves to the socket to speak the protocol on: a TLS one, or the plain one when
 * the server said 'N' and the mode is prefer. Rejects (code ETLSREFUSED / the TLS error) otherwise.
 */
export function negotiateServerTls(
  raw: Socket,
  mode: ServerTlsMode,
  timeoutMs: number,
  verify: ServerVerify = { ca: undefined, host: '' },
): Promise<Socket> {
  if (mode === 'disable') return Promise.resolve(raw);
  return new Promise((resolve, reject) => {
    const timer = setTimeout(
      () =>
        fail(
          Object.assign(new Error(`no answer to the SSL request within ${timeoutMs} ms`), {
            code: 'ETIMEDOUT',
          }),
        ),
      timeoutMs,
    );
    const fail = (err: Error): void => {
      clearTimeout(timer);
      raw.off('data', onData);
      raw.destroy();
      reject(err);
    };
    const onClose = (): void =>
      fail(Object.assign(new Error('closed during the SSL request'), { code: 'ECONNRESET' }));
    const onData = (d: Buffer): void => {
      raw.off('data', onData);
      raw.off('close', onClose);
      raw.pause();
      clearTimeout(timer);
      // A server sends nothing after its answer before the client speaks: more is not PostgreSQL.
      if (d.length !== 1 || (d[0] !== 0x53 && d[0] !== 0x4e)) {
        raw.destroy();
        return reject(Object.assign(new Error('unexpected answer to the SSL request'), { code: 'EPROTO' }));
      }
      if (d[0] === 0x4e) {
        if (mode === 'prefer') return resolve(raw);
        raw.destroy();
        return reject(
          Object.assign(new Error(`the replica does not accept TLS (--server-tls ${mode})`), {
            code: 'ETLSREFUSED',
          }),
        );
      }
      const tls = tlsConnect({
        socket: raw,
        minVersion: 'TLSv1.2',
        ...serverTlsOptions(mode, verify.ca, verify.host),
      });
      const tlsTimer = setTimeout(() => tls.destroy(new Error('TLS handshake timed out')), timeoutMs);
      tls.once('secureConnect', () => {
        clearTimeout(tlsTimer);
        tls.off('error', onTlsError);
        tls.setNoDelay(true);
        resolve(tls);
      });
      const onTlsError = (err: Error): void => {
        clearTimeout(tlsTimer);
        tls.destroy();
        reject(verifyFailure(err, mode, verify.host));
      };
      tls.once('error', onTlsError);
    };
    raw.on('data', onData);
    raw.once('close', onClose);
    raw.write(SSL_REQUEST);
  });
}
