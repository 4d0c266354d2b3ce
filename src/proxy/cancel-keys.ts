import { randomBytes, randomInt, timingSafeEqual } from 'node:crypto';

/** Where a cancel for one proxied session goes: the replica and the backend's own key. */
export interface BackendKey {
  replica: string;
  port: number;
  pid: number;
  secret: Buffer;
}

/**
 * The proxy issues its own cancel keys (pid + 4-byte secret) and maps them to the backend's:
 * replicas are separate servers whose process ids may coincide (containers), and a client can
 * only cancel the session it was given the key of.
 */
export class CancelKeys {
  private readonly byPid = new Map<number, { secret: Buffer; backend: BackendKey }>();

  /** A new key for a session on `backend`. */
  issue(backend: BackendKey): { pid: number; secret: Buffer } {
    let pid: number;
    do pid = randomInt(1, 0x7fffffff);
    while (this.byPid.has(pid));
    const secret = randomBytes(4);
    this.byPid.set(pid, { secret, backend });
    return { pid, secret };
  }

  /** The backend of a key the proxy issued; undefined for an unknown or wrong one. */
  lookup(pid: number, secret: Buffer): BackendKey | undefined {
    const e = this.byPid.get(pid);
    if (!e || e.secret.length !== secret.length || !timingSafeEqual(e.secret, secret)) return undefined;
    return e.backend;
  }

  forget(pid: number): void {
    this.byPid.delete(pid);
  }

  get size(): number {
    return this.byPid.size;
  }
}
