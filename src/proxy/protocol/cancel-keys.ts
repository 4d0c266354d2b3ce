import { randomFillSync, timingSafeEqual } from 'node:crypto';

/** Where a cancel for one proxied session goes: the replica and the backend's own key. */
export interface BackendKey {
  replica: string;
  port: number;
  pid: number;
  secret: Buffer;
}

/** Random 32-bit words per fill of the pool (two a key: pid, secret). */
const POOL_WORDS = 1024;

/**
 * The proxy issues its own cancel keys (pid + 4-byte secret) and maps them to the backend's:
 * replicas are separate servers whose process ids may coincide (containers), and a client can
 * only cancel the session it was given the key of. The bytes come from the CSPRNG in batches: a
 * randomBytes call per session (a native job object each) cost more than the rest of its key.
 */
export class CancelKeys {
  private readonly byPid = new Map<number, { secret: Buffer; backend: BackendKey | undefined }>();
  private readonly pool = Buffer.alloc(POOL_WORDS * 4);
  private at = this.pool.length;

  /**
   * A new key for a session on `backend`; without one, a key given out before the backend's own is
   * known (the native front door swaps it in as the server's BackendKeyData passes): bind() it then.
   */
  issue(backend?: BackendKey): { pid: number; secret: Buffer } {
    let pid: number;
    do pid = this.word() & 0x7fffffff;
    while (pid === 0 || this.byPid.has(pid));
    const secret = Buffer.allocUnsafe(4);
    secret.writeUInt32BE(this.word(), 0);
    this.byPid.set(pid, { secret, backend });
    return { pid, secret };
  }

  private word(): number {
    if (this.at === this.pool.length) {
      randomFillSync(this.pool);
      this.at = 0;
    }
    const w = this.pool.readUInt32BE(this.at);
    this.at += 4;
    return w;
  }

  /** The backend of a key issued without one. */
  bind(pid: number, backend: BackendKey): void {
    const e = this.byPid.get(pid);
    if (e) e.backend = backend;
  }

  /** The backend of a key the proxy issued; undefined for an unknown or wrong one (or not bound yet). */
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
