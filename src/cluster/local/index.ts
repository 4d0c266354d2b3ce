/**
 * Local-process driver: one primary and K hot standbys as postgres processes on 127.0.0.1, data
 * under the state folder. Same ClusterDriver interface as the Docker driver.
 *
 * CPU quotas are enforced with a cgroup per server where the machine allows it (root and a
 * writable cgroup filesystem, see cgroup.ts); elsewhere setCpus only records the value so CPU
 * fractions can be computed against it, and `cpusEnforced` says which.
 */
import {
  chmodSync,
  chownSync,
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { BaseDriver, serverSettings } from '../base-driver.js';
import { type ClusterDriver, type ServerStatus } from '../driver.js';
import { type ClusterSpec } from '../../run-format/cluster-record.js';
import { serverIds, type ServerId } from '../../core/replica-ids.js';
import { type Endpoint } from '../../core/endpoint.js';
import { errorText, PlbError } from '../../core/errors.js';
import { createReplicationSlot, waitAccepting, withClient } from '../pg-util.js';
import {
  clusterDir,
  dataDir,
  ensureClusterDir,
  newClusterId,
  readClusterRecord,
  removeClusterRecord,
  updateClusterRecord,
  writeClusterRecord,
} from '../state.js';
import { findBinDir, runTool, serverUser, type RunAs } from './binaries.js';
import { CpuLimiter } from './cgroup.js';
import {
  allStats,
  clearStaleLock,
  clockTicksPerSecond,
  postmasterPid,
  processesUnder,
  processTree,
  readStat,
  signalTree,
  treeTicks,
} from './procfs.js';

/** In the data folder: the id of the cluster instance that made it (down checks it). */
const ID_FILE = '.plb-id';

export function slotName(id: ServerId): string {
  return `plb_${id}`;
}

/** Local servers share the host's memory with no limit of their own: shared_buffers stays small. */
const SHARED_BUFFERS_MAX_MB = 32;

/**
 * postgresql.conf settings of every server: loopback only, small memory, room for K standbys.
 * cluster_name plb-<id> (as in the Docker image) lets a session that came through a balancer ask
 * which server it landed on (`--strategy via`).
 */
export function serverConf(spec: ClusterSpec, port: number, id: ServerId = 'primary'): string {
  const conf = serverSettings(spec, SHARED_BUFFERS_MAX_MB);
  return [
    '# written by plb',
    "listen_addresses = '127.0.0.1'",
    `port = ${port}`,
    `cluster_name = 'plb-${id}'`,
    // No unix socket: TCP on loopback only, and no dependence on /var/run/postgresql.
    "unix_socket_directories = ''",
    `shared_buffers = ${conf.sharedBuffersMb}MB`,
    'work_mem = 4MB',
    'maintenance_work_mem = 32MB',
    'effective_cache_size = 128MB',
    `max_connections = ${conf.maxConnections}`,
    // mmap keeps dynamic shared memory inside the data dir, so a SIGKILLed server leaves nothing in /dev/shm.
    'dynamic_shared_memory_type = mmap',
    'huge_pages = off',
    'wal_level = replica',
    'min_wal_size = 8MB',
    'max_wal_size = 256MB',
    `max_wal_senders = ${conf.maxWalSenders}`,
    `max_replication_slots = ${conf.maxReplicationSlots}`,
    'hot_standby = on',
    'wal_receiver_status_interval = 1s',
    "password_encryption = 'scram-sha-256'",
    'logging_collector = off',
    '',
  ].join('\n');
}

const HBA = [
  '# written by plb: password (scram-sha-256) over loopback TCP only',
  'host all plb 127.0.0.1/32 scram-sha-256',
  'host replication plb 127.0.0.1/32 scram-sha-256',
  '',
].join('\n');

/** The first folder on the way to `dir` that `who` may not traverse, or null. */
export function blockedAncestor(dir: string, who: RunAs): string | null {
  let d = resolve(dir);
  for (;;) {
    const st = statSync(d);
    const ok =
      st.uid === who.uid
        ? (st.mode & 0o100) !== 0
        : st.gid === who.gid
          ? (st.mode & 0o010) !== 0
          : (st.mode & 0o001) !== 0;
    if (!ok) return d;
    const up = dirname(d);
    if (up === d) return null;
    d = up;
  }
}

export class LocalDriver extends BaseDriver implements ClusterDriver {
  readonly kind = 'local' as const;
  private binDirCache: string | undefined;
  private runAsCache: { v: RunAs | undefined } | undefined;
  private readonly limiter: CpuLimiter;

  constructor(spec: ClusterSpec) {
    super(spec);
    this.limiter = new CpuLimiter(spec.name);
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

  /** Files the server reads must belong to the postgres user when we run as root. */
  private own(path: string): void {
    if (this.runAs) chownSync(path, this.runAs.uid, this.runAs.gid);
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
      await this.tool(
        'pg_ctl',
        ['start', '-w', '-t', '120', '-D', this.dir(id), '-l', this.logFile(id)],
        undefined,
        130_000,
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

  private prepareFolders(): void {
    const cdir = ensureClusterDir(this.spec.stateDir, this.spec.name);
    if (this.runAs) {
      // The postgres user must traverse (not read) the state folders to reach its data dirs:
      // add o+x to the two folders plb made, and check the ancestors (we never chmod those).
      for (const d of [this.spec.stateDir, cdir]) {
        const mode = statSync(d).mode & 0o7777;
        if ((mode & 0o001) === 0) chmodSync(d, mode | 0o011);
      }
      const blocked = blockedAncestor(dirname(resolve(this.spec.stateDir)), this.runAs);
      if (blocked) {
        throw new PlbError('CLUSTER_UP_FAILED', `the postgres user cannot reach ${blocked}`, {
          hint: 'set PLB_STATE_DIR to a folder the postgres OS user can traverse (e.g. under /tmp)',
        });
      }
    }
    rmSync(this.dataRoot, { recursive: true, force: true });
    mkdirSync(this.dataRoot, { mode: 0o700 });
    // A driver made without an id (the library's createLocalDriver) still marks the record's id.
    const id = this.spec.id ?? readClusterRecord(this.spec.stateDir, this.spec.name)?.id;
    if (id !== undefined) writeFileSync(join(this.dataRoot, ID_FILE), id + '\n');
    this.own(this.dataRoot);
  }

  /** The data folder is this instance's: it carries our id (or we are a down by name, without one). */
  private ownsData(): boolean {
    if (this.spec.id === undefined) return true;
    try {
      return readFileSync(join(this.dataRoot, ID_FILE), 'utf8').trim() === this.spec.id;
    } catch {
      return false;
    }
  }

  private async create(log: (line: string) => void): Promise<void> {
    const { spec } = this;
    const creds = await this.credentials();
    this.prepareFolders();
    const [primary, ...replicas] = this.endpoints();
    if (!primary) throw new PlbError('INTERNAL', 'no primary endpoint');

    // initdb: the password goes through a 0600 temp file that is deleted right after.
    const pwfile = join(this.dataRoot, '.pwfile');
    writeFileSync(pwfile, creds.password + '\n', { mode: 0o600 });
    this.own(pwfile);
    try {
      log(`initdb primary (binaries: ${this.binDir})`);
      await this.tool('initdb', [
        '-D',
        this.dir('primary'),
        '-U',
        creds.user,
        '--pwfile',
        pwfile,
        '--auth',
        'scram-sha-256',
        '-E',
        'UTF8',
        '--no-locale',
        '--no-sync',
        // 1 MiB WAL segments: six data dirs stay small, so base backups and down are quick.
        '--wal-segsize',
        '1',
      ]);
    } finally {
      rmSync(pwfile, { force: true });
    }
    // Our settings live in plb.conf, included last, so a standby only needs its own copy rewritten.
    const pdir = this.dir('primary');
    writeFileSync(join(pdir, 'postgresql.conf'), "\ninclude_if_exists = 'plb.conf'\n", { flag: 'a' });
    writeFileSync(join(pdir, 'plb.conf'), serverConf(spec, primary.port));
    writeFileSync(join(pdir, 'pg_hba.conf'), HBA);
    this.own(join(pdir, 'plb.conf'));

    log(`starting primary on 127.0.0.1:${primary.port}`);
    await this.pgCtlStart('primary');
    await waitAccepting(primary, { ...creds, database: 'postgres' }, 60_000);
    await withClient(
      primary,
      creds,
      async (c) => {
        const r = await c.query('select 1 from pg_database where datname = $1', [creds.database]);
        if (r.rowCount === 0) await c.query(`create database ${creds.database}`);
      },
      { database: 'postgres' },
    );

    // Standbys are made in parallel; allSettled so nothing is still running when a failure cleans up.
    const makeStandby = async (r: Endpoint): Promise<void> => {
      log(`base backup for ${r.id} (slot ${slotName(r.id)})`);
      await createReplicationSlot(primary, creds, slotName(r.id));
      await this.tool(
        'pg_basebackup',
        [
          '-h',
          primary.host,
          '-p',
          String(primary.port),
          '-U',
          creds.user,
          '-D',
          this.dir(r.id),
          '-R',
          '-S',
          slotName(r.id),
          '-X',
          'stream',
          '-c',
          'fast',
          '--no-sync',
          '-w',
        ],
        // PGPASSWORD, not argv: never visible in ps. -R writes it into the standby's primary_conninfo.
        { PGPASSWORD: creds.password },
      );
      writeFileSync(join(this.dir(r.id), 'plb.conf'), serverConf(spec, r.port, r.id));
      this.own(join(this.dir(r.id), 'plb.conf'));
      log(`starting ${r.id} on 127.0.0.1:${r.port}`);
      await this.pgCtlStart(r.id);
      await this.waitReady(r.id, 120_000);
    };
    const results = await Promise.allSettled(replicas.map(makeStandby));
    const failed = results.find((x): x is PromiseRejectedResult => x.status === 'rejected');
    if (failed) throw failed.reason;
    log('ready: primary accepting, every standby streaming');
  }

  private pid(id: ServerId): number | null {
    return postmasterPid(this.dir(id));
  }

  /**
   * Signals the postmaster and every descendant. Not the process group: each postgres child calls
   * setsid() itself, so a group signal would only reach the postmaster.
   */
  private signalServer(pid: number, signal: NodeJS.Signals): void {
    // Postmaster first: once stopped it cannot fork a child the tree snapshot would miss.
    try {
      process.kill(pid, signal);
    } catch {
      // gone
    }
    signalTree(pid, signal);
  }

  /** Waits until the postmaster and every child are gone (a restart needs the shared memory free). */
  private async waitGone(pid: number, pids: number[], timeoutMs = 15_000): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    const alive = () => [pid, ...pids].some((p) => readStat(p) !== null && readStat(p)?.state !== 'Z');
    while (alive()) {
      if (Date.now() > deadline) throw new PlbError('TIMEOUT', `processes of server pid ${pid} did not exit`);
      await sleep(50);
    }
  }

  async kill(id: ServerId): Promise<void> {
    this.endpoint(id);
    const pid = this.pid(id);
    if (pid === null) return;
    // Fail-stop like `docker kill`: SIGKILL the postmaster and, so nothing lingers, its children.
    await this.killServer(pid);
  }

  /** SIGKILL of the postmaster, then of its children; resolves when all are gone. */
  private async killServer(pid: number): Promise<void> {
    const tree = processTree(pid).map((s) => s.pid);
    for (const p of [pid, ...tree]) {
      try {
        process.kill(p, 'SIGKILL');
      } catch {
        // gone already
      }
    }
    await this.waitGone(pid, tree);
  }

  async start(id: ServerId): Promise<void> {
    this.endpoint(id);
    const pid = this.pid(id);
    if (pid !== null) {
      this.signalServer(pid, 'SIGCONT');
    } else {
      await this.pgCtlStart(id);
    }
    await this.waitReady(id, 120_000);
  }

  async stop(id: ServerId): Promise<void> {
    this.endpoint(id);
    const pid = this.pid(id);
    if (pid === null) return;
    this.signalServer(pid, 'SIGCONT'); // a paused server cannot shut down
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
    this.signalServer(pid, 'SIGSTOP');
    // Like docker pause, resolve once it took: a status read right after must see it paused.
    for (let i = 0; i < 200 && readStat(pid)?.state !== 'T' && readStat(pid) !== null; i++) await sleep(5);
  }

  async unpause(id: ServerId): Promise<void> {
    this.endpoint(id);
    const pid = this.pid(id);
    if (pid === null) return;
    this.signalServer(pid, 'SIGCONT');
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
    const owns = this.ownsData();
    const dirs =
      owns && existsSync(root)
        ? readdirSync(root, { withFileTypes: true })
            .filter((d) => d.isDirectory())
            .map((d) => join(root, d.name))
        : [];
    if (owns) {
      // A plb killed half-way (SIGKILL, power loss) leaves children no pid file names: an initdb,
      // a pg_basebackup, a postmaster still starting. They work in this cluster's folder: end them.
      const strays = processesUnder(root);
      for (const p of strays) {
        try {
          process.kill(p, 'SIGKILL');
        } catch {
          // gone already
        }
      }
      if (strays.length > 0) await this.waitGone(strays[0] as number, strays.slice(1));
    }
    await Promise.all(
      dirs.map(async (d) => {
        const pid = postmasterPid(d);
        // SIGKILL, not pg_ctl stop: the data is deleted anyway and this cannot hang on a paused or
        // wedged server (SIGKILL also ends SIGSTOPped processes).
        if (pid !== null) await this.killServer(pid);
        clearStaleLock(d); // frees the SysV shared memory segment the postmaster left
      }),
    );
    if (owns) {
      for (const id of this.ids()) this.limiter.remove(id);
      // The id file goes last: a down cut short (a kill, a crash) leaves a folder that still
      // says whose it is, so the next down removes the rest instead of leaving it alone.
      if (existsSync(root))
        for (const e of readdirSync(root))
          if (e !== ID_FILE) rmSync(join(root, e), { recursive: true, force: true });
      rmSync(root, { recursive: true, force: true });
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
