/**
 * ClusterDriver on Docker (dockerode; DOCKER_HOST honoured by docker-modem): one container per
 * server on the host network, each postgres on 127.0.0.1:basePort+i. The container runs
 * compose/plb-entry.sh, which does its own initdb / pg_basebackup -R -S <slot>, so official
 * postgres images and the offline Debian image both work. Data lives in the container's
 * writable layer: docker kill + docker start keeps it and a standby catches up via its slot.
 *
 * The password reaches a container as a file copied in before start (putArchive), never in its
 * command line, environment or logs.
 */
import { cpus as hostCpus } from 'node:os';
import Docker from 'dockerode';
import type { ClusterDriver, ClusterSpec, Credentials, Endpoint, ServerId, ServerStatus } from '../driver.js';
import { PlbError } from '../../errors.js';
import { ensureDataset } from '../../workload/dataset.js';
import { pgConnector, type Connector } from '../connector.js';
import { portFree } from '../ports.js';
import { createReplicationSlot, currentWalLsn, replicaReplication, withClient } from '../pg-util.js';
import { loadCredentials, validateClusterName } from '../state.js';
import { ensureImage } from '../image.js';
import { entryScript, packageVersion } from '../../package-info.js';
import { CpuReader } from './cpu.js';
import { logText } from './logs.js';
import { makeTar } from './tar.js';

export const LABEL_CLUSTER = 'plb.cluster';
export const LABEL_SERVER = 'plb.server';
export const LABEL_VERSION = 'plb.version';
/** The cluster instance's unique id (its record's id): down removes only what carries it. */
export const LABEL_ID = 'plb.id';

export function containerName(cluster: string, id: ServerId): string {
  return `plb-${cluster}-${id}`;
}

/** 'primary', 'r1'..'rK'. */
export function serverIds(replicas: number): ServerId[] {
  return ['primary', ...Array.from({ length: replicas }, (_, i) => `r${i + 1}`)];
}

/** True when the Docker engine answers a ping within timeoutMs. */
export async function dockerAvailable(timeoutMs = 1500, docker?: Docker): Promise<boolean> {
  let d: Docker;
  try {
    d = docker ?? new Docker({ timeout: timeoutMs });
  } catch {
    return false;
  }
  let timer: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([
      d.ping().then(() => true),
      new Promise<boolean>((resolve) => {
        timer = setTimeout(() => resolve(false), timeoutMs);
      }),
    ]);
  } catch {
    return false;
  } finally {
    clearTimeout(timer);
  }
}

export interface DockerDriverOptions {
  docker?: Docker;
  /** Time allowed for `up` to become ready (default 180 s). */
  upTimeoutMs?: number;
}

export function createDockerDriver(spec: ClusterSpec, opts: DockerDriverOptions = {}): DockerDriver {
  return new DockerDriver(spec, opts);
}

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

function statusCode(err: unknown): number | undefined {
  return (err as { statusCode?: number } | null)?.statusCode;
}

function message(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

function validateSpec(spec: ClusterSpec): void {
  validateClusterName(spec.name);
  const bad = (field: string, why: string) => new PlbError('BAD_INPUT', `${field}: ${why}`);
  if (!Number.isInteger(spec.replicas) || spec.replicas < 1 || spec.replicas > 32)
    throw bad('replicas', `${spec.replicas} is not an integer from 1 to 32`);
  if (!Number.isInteger(spec.basePort) || spec.basePort < 1024 || spec.basePort + spec.replicas > 65535)
    throw bad('basePort', `${spec.basePort} is not a port from 1024 that leaves room for the replicas`);
  if (!(spec.cpus > 0)) throw bad('cpus', `${spec.cpus} is not a positive number of cores`);
  if (!(spec.primaryCpus > 0))
    throw bad('primaryCpus', `${spec.primaryCpus} is not a positive number of cores`);
  if (!Number.isInteger(spec.memoryMb) || spec.memoryMb < 64)
    throw bad('memoryMb', `${spec.memoryMb} is not an integer of at least 64 MiB`);
  if (!Number.isInteger(spec.maxConnections) || spec.maxConnections < 1)
    throw bad('maxConnections', `${spec.maxConnections} is not a positive integer`);
}

interface ContainerView {
  id: string;
  running: boolean;
  paused: boolean;
  nanoCpus: number;
}

export class DockerDriver implements ClusterDriver {
  readonly kind = 'docker' as const;
  readonly spec: ClusterSpec;
  private readonly docker: Docker;
  private readonly cpu: CpuReader;
  private readonly upTimeoutMs: number;
  /** Container id per server, filled on create and on lookup. */
  private readonly ids = new Map<ServerId, string>();
  /** Per server: last raw cgroup reading and the sum of readings before restarts. */
  private readonly cpuBase = new Map<ServerId, { last: number; base: number }>();

  constructor(spec: ClusterSpec, opts: DockerDriverOptions = {}) {
    validateSpec(spec);
    this.spec = { ...spec };
    this.docker = opts.docker ?? new Docker();
    this.cpu = new CpuReader(this.docker);
    this.upTimeoutMs = opts.upTimeoutMs ?? 180_000;
  }

  endpoints(): Endpoint[] {
    return serverIds(this.spec.replicas).map((id, i) => ({
      id,
      kind: i === 0 ? 'primary' : 'replica',
      host: '127.0.0.1',
      port: this.spec.basePort + i,
    }));
  }

  async credentials(): Promise<Credentials> {
    return loadCredentials(this.spec.stateDir, this.spec.name);
  }

  private endpoint(id: ServerId): Endpoint {
    const ep = this.endpoints().find((e) => e.id === id);
    if (!ep) throw new PlbError('BAD_INPUT', `server: "${id}" is not a server of cluster ${this.spec.name}`);
    return ep;
  }

  private labels(id: ServerId): Record<string, string> {
    return {
      [LABEL_CLUSTER]: this.spec.name,
      [LABEL_SERVER]: id,
      [LABEL_VERSION]: packageVersion(),
      ...(this.spec.id !== undefined ? { [LABEL_ID]: this.spec.id } : {}),
    };
  }

  /** Label filter of what this driver owns: its id when it has one, else the whole name. */
  private ownFilter(anyId = false): string[] {
    const name = `${LABEL_CLUSTER}=${this.spec.name}`;
    return this.spec.id !== undefined && !anyId ? [name, `${LABEL_ID}=${this.spec.id}`] : [name];
  }

  /** Every container of this cluster (any state), by label; anyId: also other instances of the name. */
  async listOwn(anyId = false): Promise<Docker.ContainerInfo[]> {
    try {
      return await this.docker.listContainers({ all: true, filters: { label: this.ownFilter(anyId) } });
    } catch (cause) {
      throw new PlbError('DOCKER_UNAVAILABLE', 'the Docker engine does not answer', {
        hint: 'start dockerd (or set DOCKER_HOST), or use --driver local',
        cause,
      });
    }
  }

  private async containerId(id: ServerId): Promise<string> {
    this.endpoint(id);
    const known = this.ids.get(id);
    if (known) return known;
    const found = (await this.listOwn()).find((c) => c.Labels[LABEL_SERVER] === id);
    if (!found) {
      throw new PlbError('CLUSTER_NOT_FOUND', `server ${id} of cluster ${this.spec.name} has no container`, {
        hint: `run \`plb cluster up --name ${this.spec.name}\``,
      });
    }
    this.ids.set(id, found.Id);
    return found.Id;
  }

  private async view(id: ServerId): Promise<ContainerView | null> {
    let cid: string;
    try {
      cid = await this.containerId(id);
    } catch (err) {
      if (err instanceof PlbError && err.code === 'CLUSTER_NOT_FOUND') return null;
      throw err;
    }
    try {
      const info = await this.docker.getContainer(cid).inspect();
      return {
        id: cid,
        running: info.State.Running && !info.State.Paused,
        paused: info.State.Paused,
        nanoCpus: info.HostConfig.NanoCpus ?? 0,
      };
    } catch (err) {
      if (statusCode(err) === 404) {
        this.ids.delete(id);
        return null;
      }
      throw err;
    }
  }

  /** Last lines of a container's output, for error messages (postgres never logs the password). */
  private async logTail(id: ServerId, lines = 5): Promise<string> {
    try {
      const cid = await this.containerId(id);
      const logs = await this.docker
        .getContainer(cid)
        .logs({ stdout: true, stderr: true, tail: lines, follow: false });
      const text = await logText(this.docker.modem, logs);
      return text.trim().split('\n').slice(-lines).join(' | ');
    } catch {
      return '';
    }
  }

  private async createServer(id: ServerId, image: string, password: string, script: string): Promise<void> {
    const primary = id === 'primary';
    const ep = this.endpoint(id);
    // initdb and pg_basebackup run with the whole host (faster up); up() then sets the quota.
    const cpus = hostCpus().length;
    const memory = this.spec.memoryMb * 1024 * 1024;
    const env = [
      `PLB_ROLE=${primary ? 'primary' : 'standby'}`,
      `PLB_ID=${id}`,
      `PLB_PORT=${ep.port}`,
      `PLB_PRIMARY_PORT=${this.spec.basePort}`,
      `PLB_SLOT=${id}`,
      `PLB_MAX_SENDERS=${this.spec.replicas + 5}`,
      // Capped: the dataset is small, and the limit grows with max_connections (backends' memory).
      `PLB_SHARED_BUFFERS=${Math.max(16, Math.min(128, Math.floor(this.spec.memoryMb / 4)))}MB`,
      `PLB_MAX_CONNECTIONS=${this.spec.maxConnections}`,
      'PLB_PASSWORD_FILE=/plb/secret',
    ];
    const c = await this.docker.createContainer({
      name: containerName(this.spec.name, id),
      Image: image,
      User: 'postgres',
      Entrypoint: ['/bin/sh', '/plb/entry.sh'],
      Cmd: [],
      Env: env,
      Labels: this.labels(id),
      // Fast shutdown on docker stop, as the official image does.
      StopSignal: 'SIGINT',
      StopTimeout: 10,
      HostConfig: {
        NetworkMode: 'host',
        NanoCpus: Math.round(cpus * 1e9),
        Memory: memory,
        MemorySwap: memory,
        RestartPolicy: { Name: 'no' },
      },
    });
    this.ids.set(id, c.id);
    const tar = await makeTar([
      { name: 'plb/', mode: 0o755 },
      { name: 'plb/entry.sh', mode: 0o555, content: script },
      // Readable by the postgres user inside this container only; the host copy stays 0600.
      { name: 'plb/secret', mode: 0o444, content: password },
    ]);
    const res = await c.putArchive(tar, { path: '/' });
    (res as NodeJS.ReadableStream).resume?.();
    await c.start();
  }

  async up(log: (line: string) => void = () => undefined): Promise<void> {
    const started = Date.now();
    const secs = () => ((Date.now() - started) / 1000).toFixed(1);
    // Any instance of the name counts: another one's containers would clash by name.
    const existing = await this.listOwn(true);
    if (existing.length > 0) {
      const ids = [...new Set(existing.map((c) => c.Labels[LABEL_ID] ?? 'none'))].join(', ');
      throw new PlbError(
        'CLUSTER_UP_FAILED',
        `cluster ${this.spec.name} already has ${existing.length} container(s) (id ${ids})`,
        { hint: `run \`plb cluster down --name ${this.spec.name}\` first, or use another --name` },
      );
    }
    for (const ep of this.endpoints()) {
      if (!(await portFree(ep.port))) {
        throw new PlbError('CLUSTER_UP_FAILED', `port ${ep.port} (for ${ep.id}) on 127.0.0.1 is in use`, {
          hint: 'pick another --base-port or stop what listens there',
        });
      }
    }
    const image = await ensureImage({ image: this.spec.image, docker: this.docker, log });
    log(`image ${image}`);
    const creds = await this.credentials();
    const script = entryScript();
    const deadline = Date.now() + this.upTimeoutMs;
    const left = () => Math.max(1000, deadline - Date.now());
    try {
      await this.createServer('primary', image, creds.password, script);
      await this.waitServer('primary', left());
      log(`primary ready on 127.0.0.1:${this.spec.basePort} (${secs()} s)`);
      const primary = this.endpoint('primary');
      const replicas = this.endpoints().filter((e) => e.kind === 'replica');
      for (const r of replicas) await createReplicationSlot(primary, creds, r.id);
      await Promise.all(
        replicas.map(async (r) => {
          await this.createServer(r.id, image, creds.password, script);
          await this.waitServer(r.id, left());
        }),
      );
      log(`${replicas.length} standbys streaming (${secs()} s)`);
      // Boot ran unthrottled (initdb, base backups); now the quotas of the spec apply.
      await Promise.all(
        this.endpoints().map((e) =>
          this.applyCpus(e.id, e.kind === 'primary' ? this.spec.primaryCpus : this.spec.cpus),
        ),
      );
    } catch (err) {
      const reason = err instanceof PlbError ? err.message : message(err);
      await this.down().catch(() => undefined);
      throw new PlbError('CLUSTER_UP_FAILED', `cluster ${this.spec.name} did not come up: ${reason}`, {
        hint: 'the containers it created were removed; see the reason, then retry',
        cause: err,
      });
    }
  }

  /**
   * Waits until the server accepts connections and, for a standby, its WAL receiver streams.
   * Fails at once (with the container's last log lines) when the container exits.
   */
  private async waitServer(id: ServerId, timeoutMs: number): Promise<void> {
    const ep = this.endpoint(id);
    const creds = await this.credentials();
    const deadline = Date.now() + timeoutMs;
    let last = 'not started';
    for (;;) {
      const v = await this.view(id);
      if (!v) throw new PlbError('CLUSTER_NOT_FOUND', `${id} has no container`);
      if (v.paused) throw new PlbError('TIMEOUT', `${id} is paused`, { hint: 'unpause it first' });
      if (!v.running) {
        const tail = await this.logTail(id);
        throw new PlbError('CLUSTER_UP_FAILED', `${id} exited${tail ? `: ${tail}` : ''}`);
      }
      try {
        const state = await withClient(
          ep,
          creds,
          async (c) => {
            const r = await c.query<{ rec: boolean; st: string | null }>(
              'select pg_is_in_recovery() as rec, (select status from pg_stat_wal_receiver limit 1) as st',
            );
            return r.rows[0];
          },
          { timeoutMs: 2000, queryTimeoutMs: 2000 },
        );
        if (ep.kind === 'primary' || state?.st === 'streaming') return;
        last = `replication ${state?.st ?? 'not started'}`;
      } catch (err) {
        last = message(err);
      }
      if (Date.now() >= deadline) {
        throw new PlbError('TIMEOUT', `${id} not ready after ${Math.round(timeoutMs / 1000)} s: ${last}`);
      }
      await sleep(200);
    }
  }

  connector(credentials: Credentials): Connector {
    return pgConnector(this.endpoints(), credentials);
  }

  async prepareDataset(rows: number, log: (line: string) => void): Promise<{ loaded: boolean; ms: number }> {
    const eps = this.endpoints();
    const primary = eps.find((e) => e.kind === 'primary');
    if (!primary) throw new PlbError('CLUSTER_NOT_FOUND', 'the cluster has no primary endpoint');
    return ensureDataset(
      primary,
      eps.filter((e) => e.kind === 'replica'),
      await this.credentials(),
      rows,
      log,
    );
  }

  async waitReady(id: ServerId, timeoutMs = 60_000): Promise<void> {
    await this.waitServer(id, timeoutMs);
  }

  async down(): Promise<void> {
    const own = await this.listOwn();
    await Promise.all(
      own.map(async (c) => {
        try {
          await this.docker.getContainer(c.Id).remove({ force: true, v: true });
        } catch (err) {
          // Already gone, or another down is removing it.
          if (statusCode(err) !== 404 && statusCode(err) !== 409) throw err;
        }
      }),
    );
    const vols = await this.docker.listVolumes({ filters: { label: this.ownFilter() } });
    await Promise.all(
      (vols.Volumes ?? []).map(async (v) => {
        try {
          await this.docker.getVolume(v.Name).remove();
        } catch (err) {
          if (statusCode(err) !== 404 && statusCode(err) !== 409) throw err;
        }
      }),
    );
    // A removed container may take a moment to drop out of the list.
    for (let i = 0; i < 50 && (await this.listOwn()).length > 0; i++) await sleep(100);
    this.ids.clear();
    this.cpuBase.clear();
  }

  async status(): Promise<ServerStatus[]> {
    const creds = await this.credentials();
    const eps = this.endpoints();
    const views = await Promise.all(eps.map((e) => this.view(e.id)));
    const primaryView = views[0];
    const primaryLsn =
      primaryView?.running === true ? await currentWalLsn(eps[0]!, creds).catch(() => null) : null;
    return Promise.all(
      eps.map(async (ep, i): Promise<ServerStatus> => {
        const v = views[i] ?? null;
        const base: ServerStatus = {
          id: ep.id,
          kind: ep.kind,
          port: ep.port,
          up: false,
          paused: v?.paused ?? false,
          replication: null,
          lagBytes: null,
          replayLagSeconds: null,
          cpus: v && v.nanoCpus > 0 ? v.nanoCpus / 1e9 : null,
        };
        // A paused server would hang the query: report it without asking.
        if (!v?.running) return base;
        if (ep.kind === 'primary') {
          const up = await withClient(ep, creds, async (c) => (await c.query('select 1')).rowCount === 1, {
            timeoutMs: 2000,
            queryTimeoutMs: 2000,
          }).catch(() => false);
          return { ...base, up };
        }
        const r = await replicaReplication(ep, creds, primaryLsn, 2000);
        return {
          ...base,
          up: r.up,
          replication: r.replication,
          lagBytes: r.lagBytes,
          replayLagSeconds: r.replayLagSeconds,
        };
      }),
    );
  }

  /** Runs a container operation; a missing container is CLUSTER_NOT_FOUND, 304/409 (already so) pass. */
  private async op(id: ServerId, what: string, fn: (c: Docker.Container) => Promise<unknown>): Promise<void> {
    const c = this.docker.getContainer(await this.containerId(id));
    try {
      await fn(c);
    } catch (err) {
      const code = statusCode(err);
      if (code === 304 || code === 409) return;
      if (code === 404) {
        this.ids.delete(id);
        throw new PlbError('CLUSTER_NOT_FOUND', `cannot ${what} ${id}: its container is gone`, {
          cause: err,
        });
      }
      throw new PlbError('INTERNAL', `cannot ${what} ${id}: ${message(err)}`, { cause: err });
    }
  }

  async kill(id: ServerId): Promise<void> {
    await this.op(id, 'kill', (c) => c.kill({ signal: 'SIGKILL' }));
  }

  async start(id: ServerId, timeoutMs = 60_000): Promise<void> {
    const v = await this.view(id);
    if (!v)
      throw new PlbError('CLUSTER_NOT_FOUND', `server ${id} of cluster ${this.spec.name} has no container`);
    if (v.paused) await this.op(id, 'unpause', (c) => c.unpause());
    else if (!v.running) await this.op(id, 'start', (c) => c.start());
    await this.waitServer(id, timeoutMs);
  }

  async stop(id: ServerId): Promise<void> {
    await this.op(id, 'stop', (c) => c.stop({ t: 10 }));
  }

  async pause(id: ServerId): Promise<void> {
    await this.op(id, 'pause', (c) => c.pause());
  }

  async unpause(id: ServerId): Promise<void> {
    await this.op(id, 'unpause', (c) => c.unpause());
  }

  async setCpus(id: ServerId, cpus: number): Promise<void> {
    const max = hostCpus().length;
    if (!(cpus >= 0.01 && cpus <= max)) {
      throw new PlbError('BAD_INPUT', `cpus: ${cpus} is not between 0.01 and ${max} (the host's cores)`);
    }
    await this.applyCpus(id, cpus);
  }

  private async applyCpus(id: ServerId, cpus: number): Promise<void> {
    await this.op(id, 'set the CPU quota of', (c) => c.update({ NanoCpus: Math.round(cpus * 1e9) }));
  }

  async cpuSeconds(): Promise<Record<ServerId, number>> {
    const out: Record<ServerId, number> = {};
    if (this.ids.size < this.spec.replicas + 1) {
      for (const c of await this.listOwn()) {
        const sid = c.Labels[LABEL_SERVER];
        if (sid !== undefined) this.ids.set(sid, c.Id);
      }
    }
    await Promise.all(
      [...this.ids].map(async ([sid, cid]) => {
        const raw = await this.cpu.read(cid);
        if (raw === null) return;
        // The counter restarts with the container: keep the series cumulative across restarts.
        const b = this.cpuBase.get(sid) ?? { last: 0, base: 0 };
        if (raw < b.last) b.base += b.last;
        b.last = raw;
        this.cpuBase.set(sid, b);
        out[sid] = b.base + raw;
      }),
    );
    return out;
  }
}
