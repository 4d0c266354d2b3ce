import pg from 'pg';
import type { Credentials } from './driver.js';

export interface HealthOptions {
  /** Time between checks of one replica. */
  intervalMs: number;
  /** A check slower than this fails (a paused server never answers). */
  timeoutMs: number;
  /** Consecutive failures that mark a replica down. */
  fall: number;
  /** Consecutive successes that mark it up again. */
  rise: number;
}

/**
 * Defaults: HAProxy's are inter 2s fall 3 rise 2; demo phases are 15 s long, so we check every
 * second with fall 2 / rise 2: a dead replica is seen within ~2 s (sooner when sessions report
 * connection errors, which count as failed checks), a flapping one needs two good checks back.
 */
export const DEFAULT_HEALTH: HealthOptions = { intervalMs: 1000, timeoutMs: 1000, fall: 2, rise: 2 };

export type HealthState = 'up' | 'down';

/** Pure fall/rise bookkeeping: feed it observations, it says when a replica changes state. */
export class HealthTracker {
  private readonly state = new Map<string, { healthy: boolean; ok: number; bad: number }>();

  constructor(
    ids: readonly string[],
    private readonly fall: number,
    private readonly rise: number,
  ) {
    for (const id of ids) this.state.set(id, { healthy: true, ok: 0, bad: 0 });
  }

  isHealthy(id: string): boolean {
    return this.state.get(id)?.healthy ?? false;
  }

  /** Returns the new state when this observation changes it, else null. */
  observe(id: string, ok: boolean): HealthState | null {
    const s = this.state.get(id);
    if (!s) return null;
    if (ok) {
      s.ok += 1;
      s.bad = 0;
      if (!s.healthy && s.ok >= this.rise) {
        s.healthy = true;
        return 'up';
      }
    } else {
      s.bad += 1;
      s.ok = 0;
      if (s.healthy && s.bad >= this.fall) {
        s.healthy = false;
        return 'down';
      }
    }
    return null;
  }

  /** Sets a state directly (oracle mode), resetting the counters. */
  force(id: string, healthy: boolean): void {
    const s = this.state.get(id);
    if (s) Object.assign(s, { healthy, ok: 0, bad: 0 });
  }
}

export type HealthVia = 'health' | 'connect' | 'session';

/**
 * Active health checks over one persistent connection per replica (reconnecting after a
 * failure), plus passive reports from sessions. Calls onChange when a replica falls or rises.
 */
export class HealthChecker {
  private readonly tracker: HealthTracker;
  private readonly clients = new Map<string, pg.Client>();
  private timer: NodeJS.Timeout | undefined;
  private running = false;
  private readonly inFlight = new Set<string>();

  constructor(
    private readonly ports: ReadonlyMap<string, number>,
    private readonly credentials: Credentials,
    private readonly opts: HealthOptions,
    private readonly onChange: (replica: string, state: HealthState, via: HealthVia) => void,
  ) {
    this.tracker = new HealthTracker([...ports.keys()], opts.fall, opts.rise);
  }

  start(): void {
    this.running = true;
    const tick = (): void => {
      if (!this.running) return;
      for (const id of this.ports.keys()) void this.checkOne(id);
      this.timer = setTimeout(tick, this.opts.intervalMs);
    };
    tick();
  }

  stop(): void {
    this.running = false;
    if (this.timer) clearTimeout(this.timer);
    for (const id of [...this.clients.keys()]) this.dropClient(id);
  }

  /** A session saw a connection error on this replica: count it as a failed check. */
  reportFailure(replica: string, via: HealthVia): void {
    this.apply(replica, false, via);
  }

  isHealthy(replica: string): boolean {
    return this.tracker.isHealthy(replica);
  }

  private apply(replica: string, ok: boolean, via: HealthVia): void {
    if (!this.running) return;
    const change = this.tracker.observe(replica, ok);
    if (change) this.onChange(replica, change, via);
  }

  private async checkOne(id: string): Promise<void> {
    if (this.inFlight.has(id)) return; // the previous check is still waiting for its timeout
    this.inFlight.add(id);
    try {
      const ok = await this.probe(id);
      this.apply(id, ok, 'health');
    } finally {
      this.inFlight.delete(id);
    }
  }

  private async probe(id: string): Promise<boolean> {
    const port = this.ports.get(id);
    if (port === undefined) return false;
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<false>((resolve) => {
      timer = setTimeout(() => resolve(false), this.opts.timeoutMs);
    });
    const attempt = (async (): Promise<boolean> => {
      let client = this.clients.get(id);
      if (!client) {
        client = new pg.Client({
          host: '127.0.0.1',
          port,
          user: this.credentials.user,
          password: this.credentials.password,
          database: this.credentials.database,
          connectionTimeoutMillis: this.opts.timeoutMs,
          application_name: 'plb-health',
        });
        client.on('error', () => {
          this.dropClient(id);
        });
        this.clients.set(id, client);
        await client.connect();
      }
      await client.query('SELECT 1');
      return true;
    })().catch(() => false);
    const ok = await Promise.race([attempt, timeout]);
    if (timer) clearTimeout(timer);
    if (!ok) this.dropClient(id);
    return ok;
  }

  private dropClient(id: string): void {
    const client = this.clients.get(id);
    if (!client) return;
    this.clients.delete(id);
    const stream = (client as unknown as { connection?: { stream?: { destroy(): void } } }).connection
      ?.stream;
    stream?.destroy();
    // Not awaited: after destroy() the 'end' handshake may never complete.
    client.end().catch(() => undefined);
  }
}
