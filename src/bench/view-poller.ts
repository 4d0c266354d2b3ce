/**
 * The `replica` router view: one poller per process reads every replica's per-class session
 * counts every interval (pg_stat_activity; the simulator's servers at the same interval) and
 * gives them to each of the process's routers, which count their own sessions on from there.
 */
import type { Cancel, Clock } from '../clock/index.js';
import type { ClusterDriver } from '../cluster/driver.js';
import { readEveryReplica, type SessionCountReader } from '../cluster/session-counts.js';
import type { Credentials } from '../core/endpoint.js';
import type { BenchConfig } from '../run-format/config.js';
import { PlbError } from '../core/errors.js';
import type { SessionRouter } from '../router/types.js';

type Observing = Required<Pick<SessionRouter, 'observeSessions'>>;

export class ViewPoller {
  private cancel: Cancel | undefined;
  private readonly inFlight = new Set<string>();
  private stopped = false;
  /** Reads that failed (a replica down or unreachable keeps the counts the routers have). */
  failedReads = 0;
  reads = 0;

  constructor(
    private readonly reader: SessionCountReader,
    private readonly ids: readonly string[],
    private readonly routers: readonly Observing[],
    private readonly clock: Clock,
    private readonly intervalMs: number,
  ) {}

  start(): void {
    const tick = (): void => {
      if (this.stopped) return;
      for (const id of this.ids) this.poll(id);
      this.cancel = this.clock.timer(this.intervalMs, tick);
    };
    tick();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    this.cancel?.();
    await this.reader.close();
  }

  /** One replica; a read still in flight (a paused server) is not doubled. */
  private poll(id: string): void {
    if (this.inFlight.has(id)) return;
    this.inFlight.add(id);
    this.reader.read(id).then(
      (counts) => {
        this.inFlight.delete(id);
        this.reads++;
        if (this.stopped) return;
        const now = this.clock.now();
        for (const r of this.routers) r.observeSessions(id, counts, now);
      },
      () => {
        this.inFlight.delete(id);
        this.failedReads++;
      },
    );
  }
}

/** What the poller did, for the run's log. */
export function viewLine(p: Pick<ViewPoller, 'reads' | 'failedReads'>): string {
  return `replica view: ${p.reads} reads of the replicas' sessions by class, ${p.failedReads} failed`;
}

/**
 * The replica view's reader of a run, every replica read once (or none: other views). Before the
 * run directory is made: a driver with no reader, or a replica it cannot read, is one line.
 */
export async function openViewReader(
  driver: Pick<ClusterDriver, 'kind' | 'sessionCounts'>,
  creds: Credentials,
  ids: readonly string[],
  config: Pick<BenchConfig, 'health' | 'routers'>,
): Promise<SessionCountReader | undefined> {
  if (config.routers?.view !== 'replica') return undefined;
  if (driver.sessionCounts === undefined)
    throw new PlbError(
      'BAD_INPUT',
      `--router-view replica: the ${driver.kind} driver cannot read the replicas' sessions`,
    );
  const reader = driver.sessionCounts(creds, config.health.timeoutMs);
  await readEveryReplica(reader, ids, '--router-view replica');
  return reader;
}
