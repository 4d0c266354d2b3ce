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
import { setTimeout as sleep } from 'node:timers/promises';
import Docker from 'dockerode';
import { BaseDriver } from '../base-driver.js';
import { faultsByOperation, type ClusterDriver, type FaultMethods, type ServerStatus } from '../driver.js';
import type { ClusterSpec } from '../../run-format/cluster-record.js';
import { cgroupMatch, cgroupOf } from '../net/cgroup2.js';
import { removeNetFaults } from '../net/net-faults.js';
import type { NetTarget } from '../net/types.js';
import { readClusterRecord } from '../state.js';
import type { ServerId } from '../../core/replica-ids.js';
import { errorText, PlbError } from '../../core/errors.js';
import { createReplicationSlot } from '../pg-util.js';
import { entryScript } from '../../core/package-info.js';
import { CpuReader, engineIsLocal } from './cpu.js';
import { createPool, poolParent, removePool } from './cpu-pool.js';
import { ensureImage, withTimeout } from './image.js';
import { logText } from './logs.js';
import { containerOptions, LABEL_CLUSTER, LABEL_ID, LABEL_SERVER, serverFiles } from './container.js';

/** True when the Docker engine answers a ping within timeoutMs. */
export async function dockerAvailable(timeoutMs = 1500, docker?: Docker): Promise<boolean> {
  let d: Docker;
  try {
    d = docker ?? new Docker({ timeout: timeoutMs });
  } catch {
    return false;
  }
  try {
    return await withTimeout(
      'ping of the Docker engine',
      timeoutMs,
      d.ping().then(() => true),
    );
  } catch {
    return false;
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

/** How long a down by another process watches for creates a killed plb left to the engine. */
const DOWN_SETTLE_MS = 3000;
/** Longest a down keeps removing before it gives up on a list that will not empty. */
const DOWN_MAX_MS = 20_000;

function statusCode(err: unknown): number | undefined {
  return (err as { statusCode?: number } | null)?.statusCode;
}

interface ContainerView {
  id: string;
  running: boolean;
  paused: boolean;
  nanoCpus: number;
}

export class DockerDriver extends BaseDriver implements ClusterDriver {
  readonly kind = 'docker' as const;
  /** Docker applies --cpus (NanoCpus) itself. */
  readonly cpusEnforced = true;
  private readonly docker: Docker;
  private readonly cpu: CpuReader;
  private readonly upTimeoutMs: number;
  /** Container id per server, filled on create and on lookup. */
  private readonly ids = new Map<ServerId, string>();
  /** Whether this instance ran `up` (then no create of its own can still be in flight). */
  private upRan = false;
  /** Per server: last raw cgroup reading and the sum of readings before restarts. */
  private readonly cpuBase = new Map<ServerId, { last: number; base: number }>();
  /** The plan's fault actions, through this driver's operations. */
  readonly faults: FaultMethods = { ...faultsByOperation(this), ...this.networkFaults() };

  constructor(spec: ClusterSpec, opts: DockerDriverOptions = {}) {
    super(spec);
    this.docker = opts.docker ?? new Docker();
    this.cpu = new CpuReader(this.docker, engineIsLocal(), poolParent(spec));
    this.upTimeoutMs = opts.upTimeoutMs ?? 180_000;
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
    const c = await this.docker.createContainer(
      containerOptions(this.spec, id, image, this.endpoint(id).port),
    );
    this.ids.set(id, c.id);
    const res = await c.putArchive(await serverFiles(script, password), { path: '/' });
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
    await this.checkPortsFree();
    this.upRan = true;
    const image = await ensureImage({ image: this.spec.image, docker: this.docker, log });
    log(`image ${image}`);
    if (this.spec.cpuPool) createPool(this.spec, (await this.docker.info()).CgroupDriver);
    const creds = await this.credentials();
    const script = entryScript();
    const deadline = Date.now() + this.upTimeoutMs;
    const left = () => Math.max(1000, deadline - Date.now());
    try {
      await this.createServer('primary', image, creds.password, script);
      await this.waitReady('primary', left());
      log(`primary ready on 127.0.0.1:${this.spec.basePort} (${secs()} s)`);
      const primary = this.endpoint('primary');
      const replicas = this.endpoints().filter((e) => e.kind === 'replica');
      for (const r of replicas) await createReplicationSlot(primary, creds, r.id);
      await Promise.all(
        replicas.map(async (r) => {
          await this.createServer(r.id, image, creds.password, script);
          await this.waitReady(r.id, left());
        }),
      );
      log(`${replicas.length} standbys streaming (${secs()} s)`);
      // Boot ran unthrottled (initdb, base backups); now the quotas of the spec apply (a pool's
      // replicas have only the pool's).
      const own = this.endpoints().filter((e) => e.kind === 'primary' || !this.spec.cpuPool);
      await Promise.all(
        own.map((e) => this.applyCpus(e.id, e.kind === 'primary' ? this.spec.primaryCpus : this.spec.cpus)),
      );
    } catch (err) {
      const reason = errorText(err);
      await this.down().catch(() => undefined);
      throw new PlbError('CLUSTER_UP_FAILED', `cluster ${this.spec.name} did not come up: ${reason}`, {
        hint: 'the containers it created were removed; see the reason, then retry',
        cause: err,
      });
    }
  }

  /**
   * A replica's packets are told apart by its container's cgroup (v2): runc puts the container's
   * processes there before they start (on a hybrid machine too, in the unified hierarchy), so its
   * walreceiver's socket belongs to it. Read from /proc: only with the engine on this machine.
   */
  protected override async netTarget(id: ServerId): Promise<NetTarget> {
    const base = await super.netTarget(id);
    if (!engineIsLocal()) return { ...base, whyNoOwnPackets: 'the Docker engine is not on this machine' };
    const info = await this.docker.getContainer(await this.containerId(id)).inspect();
    const path = info.State.Running ? cgroupOf(info.State.Pid) : null;
    if (path === null || path === '/')
      return { ...base, whyNoOwnPackets: `no cgroup v2 group of ${id}'s container was found` };
    return { ...base, ownPackets: cgroupMatch(path) };
  }

  /** A readiness wait fails at once (with the container's last log lines) when the container exits. */
  protected override serverCheck(id: ServerId): () => Promise<void> {
    return async () => {
      const v = await this.view(id);
      if (!v) throw new PlbError('CLUSTER_NOT_FOUND', `${id} has no container`);
      if (v.paused) throw new PlbError('TIMEOUT', `${id} is paused`, { hint: 'unpause it first' });
      if (!v.running) {
        const tail = await this.logTail(id);
        throw new PlbError('CLUSTER_UP_FAILED', `${id} exited${tail ? `: ${tail}` : ''}`);
      }
    };
  }

  async down(): Promise<void> {
    // Network rules first, by the cluster's id (a cluster without one has none of plb's).
    const record = readClusterRecord(this.spec.stateDir, this.spec.name);
    const id = this.spec.id ?? record?.id;
    if (id !== undefined)
      await removeNetFaults(id, record?.id === id ? record.extra : undefined).catch(() => undefined);
    await this.removeContainers();
    removePool(this.spec);
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
    this.ids.clear();
    this.cpuBase.clear();
  }

  /**
   * Removes the cluster's containers until the list stays empty. A driver that did not run `up`
   * itself may be cleaning after a killed plb whose create request the engine is still serving:
   * that container appears after the first listing, so it keeps looking for a settle window.
   */
  private async removeContainers(): Promise<void> {
    const settleMs = this.upRan ? 0 : DOWN_SETTLE_MS;
    const deadline = Date.now() + DOWN_MAX_MS;
    let quietSince = Date.now();
    for (;;) {
      const own = await this.listOwn();
      const live = own.filter((c) => c.State !== 'removing');
      if (live.length > 0) quietSince = Date.now();
      await Promise.all(
        live.map(async (c) => {
          try {
            await this.docker.getContainer(c.Id).remove({ force: true, v: true });
          } catch (err) {
            // Already gone, or another down is removing it.
            if (statusCode(err) !== 404 && statusCode(err) !== 409) throw err;
          }
        }),
      );
      // A removed container may take a moment to drop out of the list.
      if (own.length === 0 && Date.now() - quietSince >= settleMs) return;
      if (Date.now() > deadline) return;
      await sleep(own.length > 0 ? 100 : 250);
    }
  }

  async status(): Promise<ServerStatus[]> {
    const views = await Promise.all(this.endpoints().map((e) => this.view(e.id)));
    return this.statusFrom(
      views.map((v) => ({
        running: v?.running ?? false,
        paused: v?.paused ?? false,
        cpus: v && v.nanoCpus > 0 ? v.nanoCpus / 1e9 : null,
      })),
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
      throw new PlbError('INTERNAL', `cannot ${what} ${id}: ${errorText(err)}`, { cause: err });
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
    await this.waitReady(id, timeoutMs);
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
