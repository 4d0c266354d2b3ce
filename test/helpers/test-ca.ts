// A test CA and server certificates it signs (openssl), for --server-tls verify-ca/verify-full.
import { execFileSync } from 'node:child_process';
import { chmodSync, chownSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

const openssl = (args: string[]): void => void execFileSync('openssl', args, { stdio: 'ignore' });

/** A self-signed CA (CA:TRUE) in dir: `<base>.crt` and `<base>.key`. */
export function testCa(dir: string, base: string): { cert: string; key: string } {
  const cert = join(dir, `${base}.crt`);
  const key = join(dir, `${base}.key`);
  openssl([
    'req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-keyout', key, '-out', cert, '-days', '1',
    '-subj', `/CN=plb test CA ${base}`, '-addext', 'basicConstraints=critical,CA:TRUE',
    '-addext', 'keyUsage=critical,keyCertSign,cRLSign',
  ]); // prettier-ignore
  return { cert, key };
}

/**
 * A server certificate and key in dir signed by `ca`, for the subjectAltName given (e.g.
 * "IP:127.0.0.1" or "DNS:db.example"); owned like `ownerOf` when given (the server reads its key).
 */
export function signedCert(
  dir: string,
  base: string,
  ca: { cert: string; key: string },
  altName: string,
  ownerOf?: string,
): { cert: string; key: string } {
  const cert = join(dir, `${base}.crt`);
  const key = join(dir, `${base}.key`);
  const csr = join(dir, `${base}.csr`);
  const ext = join(dir, `${base}.ext`);
  writeFileSync(ext, `subjectAltName=${altName}\nextendedKeyUsage=serverAuth\n`);
  openssl(['req', '-newkey', 'rsa:2048', '-nodes', '-keyout', key, '-out', csr, '-subj', `/CN=${base}`]);
  openssl([
    'x509', '-req', '-in', csr, '-CA', ca.cert, '-CAkey', ca.key, '-CAcreateserial', '-out', cert,
    '-days', '1', '-extfile', ext,
  ]); // prettier-ignore
  chmodSync(key, 0o600); // PostgreSQL refuses a key others can read
  if (ownerOf !== undefined) {
    const st = statSync(ownerOf);
    for (const f of [cert, key]) chownSync(f, st.uid, st.gid);
  }
  return { cert, key };
}
