/**
 * Local-process driver: one primary and K hot standbys as postgres processes on 127.0.0.1, data
 * under the state folder. Same ClusterDriver interface as the Docker driver.
 *
 * CPU quotas are enforced with a cgroup per server where the machine allows it (root and a
 * writable cgroup filesystem, see cgroup.ts); elsewhere setCpus only records the value so CPU
 * fractions can be computed against it, and `cpusEnforced` says which.
 */
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { BaseDriver } from '../base-driver.js';
import { faultsByOperation, type ClusterDriver, type FaultMethods, type ServerStatus } from '../driver.js';
import { removeNetFaults } from '../net/net-faults.js';
import type { NetTarget } from '../net/types.js';
import { type ClusterSpec } from '../../run-format/cluster-record.js';
import { serverIds, type ServerId } from '../../core/replica-ids.js';
import { errorText, PlbError } from '../../core/errors.js';
import {
  clusterDir,
  dataDir,
  newClusterId,
  readClusterRecord,
  removeClusterRecord,
  updateClusterRecord,
  writeClusterRecord,
} from '../state.js';
import { findBinDir, runTool, serverUser, type RunAs } from './binaries.js';
import { createServers, type LocalServers } from './bootstrap.js';
import { CpuLimiter, ServerGroups } from './cgroup.js';
import {
  ownFile,
  ownsDataFolder,
  prepareDataFolder,
  removeDataFolder,
  serverFolders,
} from './data-folder.js';
import { killServer, killStrays, pauseServer, signalServer } from './processes.js';
import {
  allStats,
  clearStaleLock,
  clockTicksPerSecond,
  postmasterPid,
  processTree,
  readStat,
  treeTicks,
} from './procfs.js';

export class LocalDriver extends BaseDriver implements ClusterDriver {
  readonly kind = 'local' as const;
  private binDirCache: string | undefined;
  private runAsCache: { v: RunAs | undefined } | undefined;
  private readonly limiter: CpuLimiter;
  /** Each server's cgroup v2 group: the network faults tell its packets apart by it. */
  private readonly groups: ServerGroups;
  /** The plan's fault actions, through this driver's operations. */
  readonly faults: FaultMethods = {
    ...faultsByOperation(this),
    ...this.networkFaults(),
  };

  constructor(spec: ClusterSpec) {
    super(spec);
    // Made before anything is written or started: the refusal leaves nothing behind.
    if (spec.cpuPool)
      throw new PlbError('BAD_INPUT', "--cpu-pool: only the docker driver pools the replicas' CPU");
    this.limiter = new CpuLimiter(spec.name);
    this.groups = new ServerGroups(spec.name);
  }

  /** Looked up on first use, so `down` of a Docker cluster never needs a postgres OS user. */
  private get runAs(): RunAs | undefined {
    this.runAsCache ??= { v: serverUser() };
    return this.runAsCache.v;
  }

  private get binDir(): string {
    this.binDirCache ??= findBinDir();
    return this.binDirCache;
  }

  private get dataRoot(): string {
    return join(clusterDir(this.spec.stateDir, this.spec.name), 'data');
  }

  private dir(id: ServerId): string {
    return dataDir(this.spec.stateDir, this.spec.name, id);
  }

  private logFile(id: ServerId): string {
    return join(this.dataRoot, `${id}.log`);
  }

  private ids(): ServerId[] {
    return serverIds(this.spec.replicas);
  }

  private own(path: string): void {
    ownFile(path, this.runAs);
  }

  private tool(tool: string, args: string[], env?: Record<string, string>, timeoutMs?: number) {
    return runTool(this.binDir, tool, args, {
      cwd: this.dataRoot,
      ...(this.runAs ? { runAs: this.runAs } : {}),
      ...(env ? { env } : {}),
      ...(timeoutMs !== undefined ? { timeoutMs } : {}),
    });
  }

  private logTail(id: ServerId): string {
    try {
      const lines = readFileSync(this.logFile(id), 'utf8').trim().split('\n');
      return lines.slice(-3).join(' / ');
    } catch {
      return '';
    }
  }

  /** True when this machine enforces the CPU quotas (cgroups), as Docker does. */
  get cpusEnforced(): boolean {
    return this.limiter.enforced;
  }

  /** Moves a running server (postmaster and children) into its cgroup with its quota. */
  private applyQuota(id: ServerId): void {
    const pid = this.pid(id);
    if (pid === null) return;
    const cpus = this.cpusOf(id, readClusterRecord(this.spec.stateDir, this.spec.name)?.cpus);
    this.limiter.limit(
      id,
      processTree(pid).map((p) => p.pid),
      cpus,
    );
  }

  private async pgCtlStart(id: ServerId): Promise<void> {
    clearStaleLock(this.dir(id));
    try {
      // Started in its group: the walreceiver's connection to the primary is made there.
      await this.groups.spawnInside(id, () =>
        this.tool(
          'pg_ctl',
          ['start', '-w', '-t', '120', '-D', this.dir(id), '-l', this.logFile(id)],
          undefined,
          130_000,
        ),
      );
      this.applyQuota(id);
    } catch (err) {
      const tail = this.logTail(id);
      throw new Error(`${id} did not start: ${errorText(err)}${tail ? ` (log: ${tail})` : ''}`, {
        cause: err,
      });
    }
  }

  async up(log: (line: string) => void = () => undefined): Promise<void> {
    const { spec } = this;
    const existing = readClusterRecord(spec.stateDir, spec.name);
    if (existing) {
      if (existing.driver !== 'local' || (spec.id !== undefined && existing.id !== spec.id)) {
        throw new PlbError(
          'CLUSTER_UP_FAILED',
          `cluster ${spec.name} already exists (${existing.driver} driver, id ${existing.id})`,
          {
            hint: `run \`plb cluster down --name ${spec.name}\` first, or use another --name`,
          },
        );
      }
      // A crashed run's network rules go first: the cluster comes back reachable.
      await removeNetFaults(existing.id, existing.extra);
      // The record is written before anything is created: only resume what was made.
      if (existsSync(join(this.dir('primary'), 'PG_VERSION'))) {
        await this.resume(log);
        return;
      }
    }
    const binDir = this.binDir; // fail with BINARIES_MISSING before creating anything
    await this.checkPortsFree();
    // The record goes first, so `down` can clean up after a crash half-way through.
    writeClusterRecord(spec.stateDir, {
      version: 1,
      name: spec.name,
      id: spec.id ?? existing?.id ?? newClusterId(),
      driver: 'local',
      spec,
      createdAt: existing?.createdAt ?? new Date().toISOString(),
      extra: { binDir },
    });
    try {
      await this.create(log);
    } catch (err) {
      log(`up failed, removing what was created: ${errorText(err)}`);
      await this.down().catch(() => undefined);
      if (err instanceof PlbError && err.code === 'CLUSTER_UP_FAILED') throw err;
      throw new PlbError('CLUSTER_UP_FAILED', `cluster ${spec.name} did not come up: ${errorText(err)}`, {
        hint: 'see the message above; `plb cluster up --driver local` needs free ports and PostgreSQL binaries',
        cause: err,
      });
    }
  }

  /** `up` of an existing local cluster: unpause and start what is not running, then wait. */
  private async resume(log: (line: string) => void): Promise<void> {
    try {
      for (const s of await this.status()) {
        if (s.paused) await this.unpause(s.id);
        else if (!s.up && existsSync(join(this.dir(s.id), 'PG_VERSION'))) {
          log(`starting ${s.id} of the existing cluster`);
          if (this.pid(s.id) === null) await this.pgCtlStart(s.id);
        }
      }
      await Promise.all(this.ids().map((id) => this.waitReady(id, 60_000)));
      log(`cluster ${this.spec.name} is up (existing)`);
    } catch (err) {
      throw new PlbError(
        'CLUSTER_UP_FAILED',
        `existing cluster ${this.spec.name} did not come up: ${errorText(err)}`,
        {
          hint: `run \`plb cluster down --name ${this.spec.name}\` and up again`,
          cause: err,
        },
      );
    }
  }

  private async create(log: (line: string) => void): Promise<void> {
    const creds = await this.credentials();
    prepareDataFolder(this.spec, this.dataRoot, this.runAs);
    const [primary, ...replicas] = this.endpoints();
    if (!primary) throw new PlbError('INTERNAL', 'no primary endpoint');
    const servers: LocalServers = {
      spec: this.spec,
      dataRoot: this.dataRoot,
      binDir: this.binDir,
      dir: (id) => this.dir(id),
      own: (path) => this.own(path),
      tool: (tool, args, env) => this.tool(tool, args, env),
      start: (id) => this.pgCtlStart(id),
      waitReady: (id, ms) => this.waitReady(id, ms),
    };
    await createServers(servers, creds, primary, replicas, log);
  }

  private pid(id: ServerId): number | null {
    return postmasterPid(this.dir(id));
  }

  /** A replica's packets are told apart by its cgroup (v2), which it was started in. */
  protected override async netTarget(id: ServerId): Promise<NetTarget> {
    const base = await super.netTarget(id);
    const m = this.groups.match(id, this.pid(id));
    return 'why' in m ? { ...base, whyNoOwnPackets: m.why } : { ...base, ownPackets: m.ownPackets };
  }

  async kill(id: ServerId): Promise<void> {
    this.endpoint(id);
    const pid = this.pid(id);
    if (pid === null) return;
    // Fail-stop like `docker kill`: SIGKILL the postmaster and, so nothing lingers, its children.
    await killServer(pid);
  }

  async start(id: ServerId): Promise<void> {
    this.endpoint(id);
    const pid = this.pid(id);
    if (pid !== null) {
      signalServer(pid, 'SIGCONT');
    } else {
      await this.pgCtlStart(id);
    }
    await this.waitReady(id, 120_000);
  }

  async stop(id: ServerId): Promise<void> {
    this.endpoint(id);
    const pid = this.pid(id);
    if (pid === null) return;
    signalServer(pid, 'SIGCONT'); // a paused server cannot shut down
    await this.tool(
      'pg_ctl',
      ['stop', '-w', '-t', '60', '-m', 'fast', '-D', this.dir(id)],
      undefined,
      70_000,
    );
  }

  async pause(id: ServerId): Promise<void> {
    this.endpoint(id);
    const pid = this.pid(id);
    if (pid === null) throw new PlbError('BAD_INPUT', `server: ${id} is not running, cannot pause it`);
    await pauseServer(pid);
  }

  async unpause(id: ServerId): Promise<void> {
    this.endpoint(id);
    const pid = this.pid(id);
    if (pid === null) return;
    signalServer(pid, 'SIGCONT');
  }

  async setCpus(id: ServerId, cpus: number): Promise<void> {
    this.endpoint(id);
    if (!(cpus > 0)) throw new PlbError('BAD_INPUT', `cpus: must be > 0, got ${cpus}`);
    // Recorded (CPU fractions are computed against it) and, where cgroups allow, enforced.
    updateClusterRecord(this.spec.stateDir, this.spec.name, (r) => ({
      ...r,
      cpus: { ...(r.cpus ?? {}), [id]: cpus },
    }));
    this.limiter.setQuota(id, cpus);
  }

  private cpusOf(id: ServerId, overrides: Record<string, number> | undefined): number {
    return overrides?.[id] ?? (id === 'primary' ? this.spec.primaryCpus : this.spec.cpus);
  }

  async cpuSeconds(): Promise<Record<ServerId, number>> {
    const tick = clockTicksPerSecond();
    const out: Record<ServerId, number> = {};
    const snapshot = allStats(); // one /proc scan for all servers
    for (const id of this.ids()) {
      const pid = this.pid(id);
      if (pid === null) continue;
      out[id] = treeTicks(processTree(pid, snapshot)) / tick;
    }
    return out;
  }

  async status(): Promise<ServerStatus[]> {
    const record = readClusterRecord(this.spec.stateDir, this.spec.name);
    return this.statusFrom(
      this.ids().map((id) => {
        const pid = this.pid(id);
        const paused = pid !== null && readStat(pid)?.state === 'T';
        return { running: pid !== null && !paused, paused, cpus: this.cpusOf(id, record?.cpus) };
      }),
    );
  }

  /**
   * Stops every server found under this cluster's data folder (by pid), removes the data and record;
   * with an id, only a data folder and record carrying it.
   */
  async down(): Promise<void> {
    const root = this.dataRoot;
    // Network rules first: the id is in the record `down` removes (none readable: nothing to do).
    if (this.ownsRecord())
      await Promise.resolve()
        .then(() =>
          removeNetFaults(this.clusterId(), readClusterRecord(this.spec.stateDir, this.spec.name)?.extra),
        )
        .catch(() => undefined);
    const owns = ownsDataFolder(this.spec, root);
    if (owns) await killStrays(root);
    await Promise.all(
      (owns ? serverFolders(root) : []).map(async (d) => {
        const pid = postmasterPid(d);
        // SIGKILL, not pg_ctl stop: the data is deleted anyway and this cannot hang on a paused or
        // wedged server (SIGKILL also ends SIGSTOPped processes).
        if (pid !== null) await killServer(pid);
        clearStaleLock(d); // frees the SysV shared memory segment the postmaster left
      }),
    );
    if (owns) {
      for (const id of this.ids()) {
        this.limiter.remove(id);
        this.groups.remove(id);
      }
      removeDataFolder(root);
    }
    if (existsSync(clusterDir(this.spec.stateDir, this.spec.name)) && this.ownsRecord())
      removeClusterRecord(this.spec.stateDir, this.spec.name);
  }

  private ownsRecord(): boolean {
    if (this.spec.id === undefined) return true;
    try {
      const r = readClusterRecord(this.spec.stateDir, this.spec.name);
      return r === null || r.id === this.spec.id;
    } catch {
      return false; // an unreadable record is left for an explicit down by name
    }
  }
}

export function createLocalDriver(spec: ClusterSpec): LocalDriver {
  return new LocalDriver(spec);
}
