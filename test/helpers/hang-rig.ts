// A replica blackholed behind the proxy (the hang path: proxy-hang.test.ts, benchmarks/proxy-hang.ts):
// every packet to and from its port dropped on lo (iptables, through NetFaults under a cluster id of
// the caller's own, so its chain and tag are its alone), and clients watched until they end.
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import type pg from 'pg';
import { chainName } from '../../src/cluster/net/iptables.js';
import { NetFaults, removeNetFaults } from '../../src/cluster/net/net-faults.js';

/** Root and an iptables that answers (the blackhole needs both). */
export function haveIptables(): boolean {
  if (process.getuid?.() !== 0) return false;
  try {
    execFileSync('iptables', ['-w', '-S', 'INPUT'], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}

/** DROP rules on lo for one replica's port at a time, tagged with an id of this rig's. */
export class Blackhole {
  readonly id = `hang${randomBytes(6).toString('hex')}`;
  private readonly faults = new NetFaults(
    () => this.id,
    () => undefined,
  );
  private cut: string | undefined;

  /** Every packet to and from 127.0.0.1:port dropped (the replica's server and kernel answer nothing). */
  async apply(replica: string, port: number): Promise<void> {
    await this.faults.apply(replica, { port, primaryPort: 0 }, 'partition', { direction: 'both' });
    this.cut = replica;
  }

  /** The rules gone (the chain and its jumps with them). */
  async heal(): Promise<void> {
    if (this.cut !== undefined) await this.faults.heal(this.cut);
    this.cut = undefined;
    await removeNetFaults(this.id);
  }

  /** Lines of iptables-save that carry this rig's tag or chain (0 once healed). */
  leftovers(): string[] {
    const chain = chainName(this.id);
    return execFileSync('iptables-save', { encoding: 'utf8' })
      .split('\n')
      .filter((l) => l.includes(this.id) || l.includes(chain));
  }
}

/** How a watched client ended: when its connection closed, and the first error it was told. */
export interface Ending {
  at: number;
  code: string | undefined;
  message: string | undefined;
}

/**
 * A connected node-postgres client whose end is watched: an error while idle (the 'error' event)
 * or of its query in flight, and the close of its connection ('end').
 */
export class Watched {
  readonly ended: Promise<Ending>;
  endedAt: number | undefined;
  private err: (Error & { code?: string }) | undefined;

  constructor(readonly client: pg.Client) {
    client.on('error', (e: Error) => (this.err ??= e));
    this.ended = new Promise((resolve) =>
      client.once('end', () => {
        this.endedAt = Date.now();
        resolve({ at: this.endedAt, code: this.err?.code, message: this.err?.message });
      }),
    );
  }

  /** A query that runs until the replica goes (its error is the client's). */
  runLong(seconds: number): void {
    this.client.query(`select pg_sleep(${seconds})`).catch((e: Error) => (this.err ??= e));
  }
}

/** The server port a client's session is on. */
export async function serverPort(c: pg.Client): Promise<number> {
  const r = await c.query<{ p: number }>('select inet_server_port() as p');
  return Number(r.rows[0]!.p);
}
