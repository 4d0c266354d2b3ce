/**
 * External driver: a cluster plb did not make (a fleet, Kubernetes, systemd units...). plb only
 * connects to it and runs the user's hooks to inject faults; it never creates or removes anything
 * there, and writes to it only the bench's dataset, and only when the file says `prepare: true`.
 */
import { PlbError } from '../../core/errors.js';
import {
  setWalReplayPaused,
  withClient,
  currentWalLsn,
  replicaReplication,
  waitCaughtUp,
  waitServerReady,
} from '../pg-util.js';
import { pgConnector, type Connector } from '../connector.js';
import { pgSessionCounts, type SessionCountReader } from '../session-counts.js';
import { ensureDataset } from '../dataset.js';
import { defaultStateDir } from '../state.js';
import type { HookName } from '../../run-format/cluster-file.js';
import { faultsByOperation, type ClusterDriver, type FaultMethods, type ServerStatus } from '../driver.js';
import type { ClusterSpec } from '../../run-format/cluster-record.js';
import type { Credentials, Endpoint } from '../../core/endpoint.js';
import type { ServerId } from '../../core/replica-ids.js';
import { redact, substitute, type ExternalCluster } from './file.js';
import { hookFailure, runHook, type HookResult } from './hooks.js';

/** A cpu hook is sampled once a second: one that takes longer than this is no sample. */
const CPU_HOOK_TIMEOUT_MS = 5000;

/** What events.jsonl records of one hook run (the 'hook' event, run-format/events.ts). */
export type HookRecord = Omit<HookResult, 'spawnError'> & {
  replica: string;
  hook: HookName;
  error?: string;
};

const NEVER = 'plb never creates or removes anything on an external cluster';

export class ExternalDriver implements ClusterDriver {
  readonly kind = 'external' as const;
  readonly spec: ClusterSpec;
  /** plb cannot know what the hooks do to CPU: a throttle hook's effect is the user's. */
  readonly cpusEnforced = false;
  /** Hears every fault hook that ran (the bench records them in events.jsonl). */
  onHook: ((r: HookRecord) => void) | undefined;
  /** Paused by a pause hook that succeeded: postgres cannot tell a paused server from a slow one. */
  private readonly paused = new Set<string>();
  private readonly cpuWarned = new Set<string>();
  /** The plan's fault actions: the cluster file's hooks, but replay's, which is SQL on the standby. */
  readonly faults: FaultMethods = {
    ...faultsByOperation(this),
    // Network faults are the hooks' too: {direction}, {percent}, {ms}, {jitter}, {rate} (bit/s) and
    // {what} in their argv.
    partition: (id, a) => this.hook(id, 'partition', { direction: a.direction ?? 'both' }),
    reset: (id) => this.hook(id, 'reset'),
    loss: (id, a) => this.hook(id, 'loss', { percent: String(a.percent ?? 0) }),
    'partition-replication': (id, a) =>
      this.hook(id, 'partition-replication', { direction: a.direction ?? 'both' }),
    delay: (id, a) => this.hook(id, 'delay', { ms: String(a.ms ?? 0), jitter: String(a.jitter ?? 0) }),
    bandwidth: (id, a) => this.hook(id, 'bandwidth', { rate: String(a.rate ?? 0) }),
    heal: (id, a) => this.hook(id, 'heal', { what: a.what ?? 'all' }),
  };

  constructor(
    readonly cluster: ExternalCluster,
    opts: { maxConnections?: number; stateDir?: string } = {},
  ) {
    const primary = cluster.servers[0]!;
    this.spec = {
      name: cluster.name,
      replicas: cluster.replicaIds.length,
      basePort: primary.port,
      cpus: cluster.cpus,
      primaryCpus: cluster.cpus,
      // Unknown and not plb's to set; 0 says so in config.json's cluster record.
      memoryMb: 0,
      maxConnections: opts.maxConnections ?? 0,
      stateDir: opts.stateDir ?? defaultStateDir(),
    };
  }

  up(): Promise<void> {
    return Promise.reject(new PlbError('BAD_INPUT', `driver: ${NEVER}; bring it up yourself`));
  }

  down(): Promise<void> {
    return Promise.reject(new PlbError('BAD_INPUT', `driver: ${NEVER}; take it down yourself`));
  }

  endpoints(): Endpoint[] {
    return this.cluster.servers.map((s) => ({ id: s.id, kind: s.kind, host: s.host, port: s.port }));
  }

  private endpoint(id: ServerId): Endpoint {
    const ep = this.endpoints().find((e) => e.id === id);
    if (!ep) throw new PlbError('BAD_INPUT', `server: "${id}" is not in ${this.cluster.path}`);
    return ep;
  }

  credentials(): Promise<Credentials> {
    const c = this.cluster;
    return Promise.resolve({ user: c.user, password: c.password, database: c.dbname });
  }

  connector(credentials: Credentials): Connector {
    return pgConnector(this.endpoints(), credentials);
  }

  sessionCounts(credentials: Credentials, timeoutMs: number): SessionCountReader {
    return pgSessionCounts(this.endpoints(), credentials, timeoutMs);
  }

  /** Replay pause and resume are SQL on the standby: no hook needed. */
  async setReplayPaused(id: ServerId, paused: boolean): Promise<void> {
    const ep = this.endpoint(id);
    if (ep.kind !== 'replica') throw new PlbError('BAD_INPUT', `server: "${id}" is not a standby`);
    await setWalReplayPaused(ep, await this.credentials(), paused);
  }

  /** Runs a fault hook; a failure (exit code, timeout, no such command) throws one line. */
  private async hook(id: ServerId, name: HookName, extra: Record<string, string> = {}): Promise<void> {
    const h = this.cluster.hooks.get(id)?.get(name);
    if (!h)
      throw new PlbError('BAD_INPUT', `${this.cluster.path}: hooks.${name}: no hook for ${name} of ${id}`);
    const argv = h.argv.map((a) => substitute(a, extra));
    const r = await runHook(argv, h.timeoutMs, { PLB_REPLICA: id, PLB_ACTION: name });
    const failure = hookFailure(r);
    this.onHook?.(this.record(id, name, r, failure));
    if (failure !== undefined)
      throw new PlbError('HOOK_FAILED', redact(this.cluster, `${name} hook of ${id}: ${failure}`));
  }

  /** The hook's run as recorded: the password cut out of everything it printed. */
  private record(id: ServerId, name: HookName, r: HookResult, failure: string | undefined): HookRecord {
    const red = (s: string): string => redact(this.cluster, s);
    return {
      replica: id,
      hook: name,
      argv: r.argv.map(red),
      exitCode: r.exitCode,
      signal: r.signal,
      timedOut: r.timedOut,
      durationMs: r.durationMs,
      stdout: red(r.stdout),
      stderr: red(r.stderr),
      ...(failure !== undefined ? { error: red(failure) } : {}),
    };
  }

  kill(id: ServerId): Promise<void> {
    return this.hook(id, 'down');
  }

  stop(id: ServerId): Promise<void> {
    return this.hook(id, 'stop');
  }

  /** The rejoin hook, then waits until the server accepts connections and streams. */
  async start(id: ServerId): Promise<void> {
    await this.hook(id, 'rejoin');
    this.paused.delete(id);
    await this.waitReady(id);
  }

  async pause(id: ServerId): Promise<void> {
    await this.hook(id, 'pause');
    this.paused.add(id);
  }

  async unpause(id: ServerId): Promise<void> {
    await this.hook(id, 'unpause');
    this.paused.delete(id);
  }

  setCpus(id: ServerId, cpus: number): Promise<void> {
    return this.hook(id, 'throttle', { cpus: String(cpus) });
  }

  /**
   * Cumulative CPU seconds of the replicas whose cpu hook printed a number; the others are left
   * out (their CPU is "not measured": null in the timeline and the report).
   */
  async cpuSeconds(): Promise<Record<ServerId, number>> {
    const out: Record<ServerId, number> = {};
    await Promise.all(
      this.cluster.replicaIds.map(async (id) => {
        const h = this.cluster.hooks.get(id)?.get('cpu');
        if (!h) return;
        const r = await runHook(h.argv, Math.min(h.timeoutMs, CPU_HOOK_TIMEOUT_MS), { PLB_REPLICA: id });
        const n = Number(r.stdout.trim());
        const failure =
          hookFailure(r) ??
          (r.stdout.trim() !== '' && Number.isFinite(n) && n >= 0
            ? undefined
            : `printed ${JSON.stringify(r.stdout.trim().slice(0, 40))}, not CPU seconds`);
        if (failure === undefined) out[id] = n;
        else this.warnCpu(id, failure);
      }),
    );
    return out;
  }

  /** A failing cpu hook would fail every second: said once per replica, on the status line. */
  private warnCpu(id: ServerId, failure: string): void {
    if (this.cpuWarned.has(id)) return;
    this.cpuWarned.add(id);
    this.onHook?.({
      replica: id,
      hook: 'cpu',
      argv:
        this.cluster.hooks
          .get(id)
          ?.get('cpu')
          ?.argv.map((a) => redact(this.cluster, a)) ?? [],
      exitCode: null,
      signal: null,
      timedOut: false,
      durationMs: 0,
      stdout: '',
      stderr: '',
      error: redact(this.cluster, `${failure} (reported once; CPU of ${id} not measured when it fails)`),
    });
  }

  async status(): Promise<ServerStatus[]> {
    const creds = await this.credentials();
    const [primary, ...replicas] = this.endpoints();
    const lsn = primary ? await currentWalLsn(primary, creds).catch(() => null) : null;
    const base = (ep: Endpoint): ServerStatus => ({
      id: ep.id,
      kind: ep.kind,
      port: ep.port,
      up: false,
      paused: this.paused.has(ep.id),
      replication: null,
      lagBytes: null,
      replayLagSeconds: null,
      cpus: ep.kind === 'replica' ? this.spec.cpus : null,
    });
    const rows = await Promise.all(
      replicas.map(async (ep): Promise<ServerStatus> => {
        if (this.paused.has(ep.id)) return base(ep);
        const r = await replicaReplication(ep, creds, lsn);
        return {
          ...base(ep),
          up: r.up,
          replication: r.replication,
          lagBytes: r.lagBytes,
          replayLagSeconds: r.replayLagSeconds,
        };
      }),
    );
    return [...(primary ? [{ ...base(primary), up: lsn !== null }] : []), ...rows];
  }

  async waitReady(id: ServerId, timeoutMs = 120_000): Promise<void> {
    await waitServerReady(this.endpoint(id), await this.credentials(), timeoutMs);
  }

  /**
   * `prepare: true`: loads the dataset as on any cluster. Otherwise the user's primary is not
   * written to: the dataset must be there, of the requested size, on every replica.
   */
  async prepareDataset(rows: number, log: (line: string) => void): Promise<{ loaded: boolean; ms: number }> {
    const [primary, ...replicas] = this.endpoints();
    if (!primary) throw new PlbError('CLUSTER_NOT_FOUND', 'the cluster has no primary');
    const creds = await this.credentials();
    if (this.cluster.prepare) return ensureDataset(primary, replicas, creds, rows, log);
    const t0 = Date.now();
    const have = await withClient(primary, creds, async (c) => {
      const t = await c.query<{ ok: boolean }>(
        "SELECT to_regclass('plb_meta') IS NOT NULL AND to_regclass('plb_items') IS NOT NULL AS ok",
      );
      if (!t.rows[0]?.ok) return null;
      const r = await c.query<{ value: string }>("SELECT value FROM plb_meta WHERE key = 'dataset_rows'");
      return r.rows[0]?.value ?? null;
    });
    if (have !== String(rows))
      throw new PlbError(
        'BAD_INPUT',
        have === null
          ? `${this.cluster.path}: the primary has no plb dataset (tables plb_items, plb_meta), and plb does not write to an external cluster unasked`
          : `${this.cluster.path}: the primary's plb dataset has ${have} rows, the bench asks for ${rows} (--dataset-rows)`,
        {
          hint: 'set `prepare: true` in the cluster file to let the bench create and load it (or pass the matching --dataset-rows)',
        },
      );
    const lsn = await currentWalLsn(primary, creds);
    for (const r of replicas) await waitCaughtUp(r, creds, lsn, 300_000);
    return { loaded: false, ms: Date.now() - t0 };
  }
}

/** SHOW max_connections of the primary (the bench's capacity check); null when it cannot tell. */
export async function primaryMaxConnections(cluster: ExternalCluster): Promise<number | null> {
  const primary = cluster.servers[0];
  if (!primary) return null;
  const creds = { user: cluster.user, password: cluster.password, database: cluster.dbname };
  try {
    return await withClient(primary, creds, async (c) => {
      const r = await c.query<{ max_connections: string }>('SHOW max_connections');
      const n = Number(r.rows[0]?.max_connections);
      return Number.isInteger(n) ? n : null;
    });
  } catch (err) {
    throw new PlbError(
      'CLUSTER_NOT_FOUND',
      redact(cluster, `${cluster.path}: cannot connect to the primary (${(err as Error).message})`),
      {
        hint: 'check primary.host/port, user, dbname and the password source in the cluster file',
      },
    );
  }
}
