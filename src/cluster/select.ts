/**
 * Choosing a driver (auto = Docker when its socket answers, else local) and reopening an existing
 * cluster from its state record.
 */
import { existsSync } from 'node:fs';
import { availableParallelism, totalmem } from 'node:os';
import { join } from 'node:path';
import { checkCpus, validateSpec } from './base-driver.js';
import { DEFAULT_CLUSTER, type ClusterDriver } from './driver.js';
import { type ClusterSpec } from '../run-format/cluster-record.js';
import { formatError, PlbError } from '../core/errors.js';
import { createLocalDriver } from './local/index.js';
import { acquireClusterLock } from './lock.js';
import {
  clusterDir,
  defaultStateDir,
  newClusterId,
  readClusterRecord,
  removeClusterRecord,
  removePassword,
  validateClusterName,
  writeClusterRecord,
  type DriverKind,
} from './state.js';
import { type ClusterRecord } from '../run-format/cluster-record.js';
import { ephemeralWarning } from './ports.js';
import { memoryForConnections } from './sizing.js';

/**
 * 'sim': simulated replicas in virtual time, inside a bench only (cluster/sim). 'external': a
 * cluster plb did not make, described by a cluster file, inside a bench only (cluster/external).
 */
export type DriverChoice = 'auto' | DriverKind | 'sim' | 'external';

/** @deprecated DEFAULT_CLUSTER.replicas */
export const DEFAULT_REPLICAS = DEFAULT_CLUSTER.replicas;
/** @deprecated DEFAULT_CLUSTER.basePort */
export const DEFAULT_BASE_PORT = DEFAULT_CLUSTER.basePort;
/** @deprecated DEFAULT_CLUSTER.maxConnections */
export const DEFAULT_MAX_CONNECTIONS = DEFAULT_CLUSTER.maxConnections;
/** Where a record from before max_connections was recorded: what each driver used then. */
const LEGACY_MAX_CONNECTIONS: Record<DriverKind, number> = { docker: 200, local: 100 };

/** A full spec from the given fields and the defaults; checks the numbers. */
export function clusterSpec(over: Partial<ClusterSpec> = {}): ClusterSpec {
  const maxConnections = over.maxConnections ?? DEFAULT_CLUSTER.maxConnections;
  const spec: ClusterSpec = {
    name: over.name ?? DEFAULT_CLUSTER.name,
    replicas: over.replicas ?? DEFAULT_CLUSTER.replicas,
    basePort: over.basePort ?? DEFAULT_CLUSTER.basePort,
    cpus: over.cpus ?? DEFAULT_CLUSTER.cpus,
    primaryCpus: over.primaryCpus ?? DEFAULT_CLUSTER.primaryCpus,
    maxConnections,
    // Derived memory is capped by the host's: the limit is a ceiling, not a reservation.
    memoryMb: over.memoryMb ?? Math.min(maxMemoryMb(), memoryForConnections(maxConnections)),
    stateDir: over.stateDir ?? defaultStateDir(),
    ...(over.image !== undefined ? { image: over.image } : {}),
    ...(over.cpuPool === true ? { cpuPool: true } : {}),
  };
  validateSpec(spec, { cpus: maxCpus(), memoryMb: maxMemoryMb() });
  return spec;
}

/** A quota above the host's cores cannot be given (Docker refuses it, after the cluster is up). */
function maxCpus(): number {
  return availableParallelism();
}

/** A server cannot be allowed more memory than the host has. */
function maxMemoryMb(): number {
  return Math.floor(totalmem() / (1024 * 1024));
}

/** A --cpus flag value: a positive number of cores, at most the host's. */
export function parseCpus(name: string, value: string): number {
  return checkCpus(name, parsePositiveNumber(name, value), maxCpus());
}

export function parseDriverChoice(value: string): DriverChoice {
  if (value === 'auto' || value === 'docker' || value === 'local' || value === 'sim' || value === 'external')
    return value;
  throw new PlbError('BAD_INPUT', `driver: must be auto, docker, local, sim or external, got "${value}"`);
}

/**
 * A simulated cluster exists only inside the bench that simulates it, and an external one is the
 * user's: nothing for `cluster up` to bring up.
 */
function refuseSim(requested: DriverChoice): asserts requested is 'auto' | DriverKind {
  if (requested === 'sim')
    throw new PlbError(
      'BAD_INPUT',
      'driver: a simulated cluster lives only inside its bench; use plb bench run --driver sim',
    );
  if (requested === 'external')
    throw new PlbError(
      'BAD_INPUT',
      'driver: plb never creates or removes anything on an external cluster; bring it up yourself and use plb bench run --driver external --cluster-file <file>',
    );
}

/** Pure part of the choice: which kind, and a sentence saying why. */
export function chooseDriverKind(
  requested: DriverChoice,
  dockerUp: boolean | undefined,
): { kind: DriverKind; reason: string } {
  refuseSim(requested);
  if (requested === 'local') return { kind: 'local', reason: 'local driver (requested with --driver local)' };
  if (requested === 'docker') {
    if (dockerUp === false) {
      throw new PlbError('DOCKER_UNAVAILABLE', 'the Docker engine does not answer', {
        hint: 'start dockerd (or set DOCKER_HOST), or use --driver local',
      });
    }
    return { kind: 'docker', reason: 'docker driver (requested with --driver docker)' };
  }
  return dockerUp
    ? { kind: 'docker', reason: 'docker driver (auto: the Docker engine answers)' }
    : {
        kind: 'local',
        reason: 'local driver (auto: no Docker engine answers; using local postgres processes)',
      };
}

interface DockerModule {
  dockerAvailable(): Promise<boolean>;
  createDockerDriver(spec: ClusterSpec): ClusterDriver & {
    listOwn(anyId?: boolean): Promise<{ Names: string[]; Labels: Record<string, string> }[]>;
  };
}

/** The Docker driver module, loaded only when needed; null when it is not part of this build. */
async function dockerModule(): Promise<DockerModule | null> {
  try {
    return (await import('./docker/index.js')) as DockerModule;
  } catch (err) {
    if ((err as { code?: string }).code === 'ERR_MODULE_NOT_FOUND') return null;
    throw err;
  }
}

async function dockerAnswers(): Promise<boolean> {
  const mod = await dockerModule();
  if (!mod) return false;
  try {
    return await mod.dockerAvailable();
  } catch {
    return false;
  }
}

function createDriver(kind: DriverKind, spec: ClusterSpec): Promise<ClusterDriver> {
  return kind === 'local' ? Promise.resolve(createLocalDriver(spec)) : createDocker(spec);
}

async function createDocker(spec: ClusterSpec): Promise<ClusterDriver> {
  const mod = await dockerModule();
  if (!mod) throw new PlbError('DOCKER_UNAVAILABLE', 'the Docker driver is not available in this build');
  return mod.createDockerDriver(spec);
}

/** The driver to bring a cluster up with, and why it was chosen. */
export async function resolveDriver(opts: {
  driver: DriverChoice;
  spec: ClusterSpec;
}): Promise<{ driver: ClusterDriver; reason: string }> {
  const dockerUp = opts.driver === 'local' ? undefined : await dockerAnswers();
  const { kind, reason } = chooseDriverKind(opts.driver, dockerUp);
  return { driver: await createDriver(kind, opts.spec), reason };
}

/** The driver of an existing cluster, from its state record; CLUSTER_NOT_FOUND when there is none. */
export async function openCluster(
  name: string = DEFAULT_CLUSTER.name,
  stateDir: string = defaultStateDir(),
): Promise<ClusterDriver> {
  const record = readClusterRecord(stateDir, validateClusterName(name));
  if (!record) {
    throw new PlbError('CLUSTER_NOT_FOUND', `no cluster named ${name} in ${stateDir}`, {
      hint: `run \`plb cluster up --name ${name}\` first (or set PLB_STATE_DIR)`,
    });
  }
  // The record's spec is authoritative, but the state folder is where we found it.
  return createDriver(record.driver, recordedSpec(record, stateDir));
}

/**
 * Removes what one cluster instance made (by its id: containers, data folder), its record and its
 * password file: nothing is left to use the password with.
 */
export async function removeOwned(driver: ClusterDriver): Promise<void> {
  const { stateDir, name, id } = driver.spec;
  // Before down: the local driver's down removes the record itself.
  const ours = recordId(stateDir, name) === id;
  await driver.down();
  if (recordId(stateDir, name) === id) removeClusterRecord(stateDir, name);
  if (ours && id !== undefined) removePassword(stateDir, name);
}

/** The id in the cluster's record; null when there is none, undefined when it is unreadable. */
function recordId(stateDir: string, name: string): string | null | undefined {
  try {
    return readClusterRecord(stateDir, name)?.id ?? null;
  } catch {
    return undefined; // unreadable: not provably ours, leave it
  }
}

interface ForeignContainer {
  name: string;
  id: string;
}

/** Containers labelled with the cluster name whose plb.id is not `ownId` (none when Docker is absent). */
async function foreignContainers(spec: ClusterSpec, ownId: string | undefined): Promise<ForeignContainer[]> {
  if (!(await dockerAnswers())) return [];
  const mod = await dockerModule();
  if (!mod) return [];
  const list = await mod.createDockerDriver({ ...spec, id: undefined }).listOwn(true);
  return list
    .map((c) => ({ name: (c.Names[0] ?? '?').replace(/^\//, ''), id: c.Labels['plb.id'] ?? 'none' }))
    .filter((c) => c.id !== ownId);
}

/**
 * `cluster down`: removes the cluster recorded in this state folder, by its id. What carries the
 * name but not that id (another user's or another state folder's cluster, leftovers of an older
 * plb) is removed only when `explicit` (the user named the cluster with --name), and then listed;
 * otherwise it is listed as left alone. Returns what it did, one line each.
 */
export async function downCluster(
  name: string = DEFAULT_CLUSTER.name,
  stateDir: string = defaultStateDir(),
  opts: { explicit?: boolean } = {},
): Promise<string[]> {
  validateClusterName(name);
  const done: string[] = [];
  let record: ClusterRecord | null = null;
  let unreadable = false;
  try {
    record = readClusterRecord(stateDir, name);
  } catch {
    unreadable = true;
  }
  const spec = record
    ? recordedSpec(record, stateDir)
    : { ...clusterSpec({ name, stateDir }), id: undefined };
  if (record) {
    await removeOwned(await createDriver(record.driver, spec));
    done.push(`removed cluster ${name} (${record.driver} driver, id ${record.id})`);
  }
  const foreign = await foreignContainers(spec, record?.id);
  const localLeft = !record && existsSync(join(clusterDir(stateDir, name), 'data'));
  const list = foreign.map((c) => `${c.name} (id ${c.id})`).join(', ');
  if (opts.explicit) {
    if (foreign.length > 0) {
      // Instance by instance, so a cluster that appears meanwhile is not swept along; containers
      // of an older plb (no plb.id) can only be taken by name.
      for (const id of new Set(foreign.map((c) => c.id)))
        await (await createDocker({ ...spec, id: id === 'none' ? undefined : id })).down();
      done.push(`docker: removed ${foreign.length} container(s) of cluster ${name} made elsewhere: ${list}`);
    }
    if (localLeft || unreadable) {
      await createLocalDriver({ ...spec, id: undefined }).down();
      done.push(`removed the unrecorded local data and record of cluster ${name} in ${stateDir}`);
    }
  } else {
    const how = `\`plb cluster down --name ${name}\` removes`;
    if (foreign.length > 0)
      done.push(
        `left alone: ${foreign.length} container(s) of cluster ${name} made elsewhere: ${list} (${how} them)`,
      );
    if (localLeft || unreadable)
      done.push(`left alone: unrecorded local data or record of cluster ${name} in ${stateDir} (${how} it)`);
  }
  // No record left in this (per-user) folder: the password has no cluster to serve (an older plb
  // kept it across down). An unreadable record may still need it: then it stays.
  if (recordId(stateDir, name) === null && removePassword(stateDir, name))
    done.push(`removed the password file of cluster ${name} in ${stateDir}`);
  if (done.length === 0) done.push(`no cluster ${name} in ${stateDir}; nothing to remove`);
  return done;
}

/**
 * `cluster up`: choose the driver, write the record with a new id BEFORE creating anything (so
 * `status` and `down` see a half-made cluster), bring the cluster up, and on failure remove what
 * this instance created. The caller holds the cluster's lock. onRecord hears of the new instance
 * as soon as its record exists (to clean up after an interrupt).
 */
export async function bringUp(opts: {
  driver: DriverChoice;
  spec: ClusterSpec;
  log?: (line: string) => void;
  onRecord?: (driver: ClusterDriver) => void;
}): Promise<{ driver: ClusterDriver; reason: string }> {
  refuseSim(opts.driver);
  const log = opts.log ?? (() => undefined);
  const { stateDir, name } = opts.spec;
  const existing = readClusterRecord(stateDir, name);
  if (existing && opts.driver !== 'auto' && existing.driver !== opts.driver) {
    throw new PlbError(
      'CLUSTER_UP_FAILED',
      `cluster ${name} already exists with the ${existing.driver} driver`,
      {
        hint: `run \`plb cluster down --name ${name}\` first, or use another --name`,
      },
    );
  }
  if (existing) {
    // An existing cluster keeps its driver (auto must not switch it), its id and recorded spec;
    // its driver's up then starts what is not running.
    const driver = await createDriver(existing.driver, recordedSpec(existing, stateDir));
    const reason = `${existing.driver} driver (existing cluster ${existing.name}, its recorded spec)`;
    log(`using the ${reason}`);
    await driver.up(log);
    return { driver, reason };
  }
  const id = newClusterId();
  const { driver, reason } = await resolveDriver({ driver: opts.driver, spec: { ...opts.spec, id } });
  log(`using the ${reason}; cluster id ${id}`);
  const ports = ephemeralWarning(opts.spec.basePort, opts.spec.basePort + opts.spec.replicas);
  if (ports) log(`warning: ${ports}`);
  writeClusterRecord(stateDir, {
    version: 1,
    name,
    id,
    // Only docker and local clusters are brought up and recorded; a sim one lives in its bench.
    driver: driver.kind as DriverKind,
    spec: driver.spec,
    createdAt: new Date().toISOString(),
  });
  opts.onRecord?.(driver);
  try {
    await driver.up(log);
  } catch (err) {
    // The drivers clean up after themselves; this also covers what they leave and the record.
    await removeOwned(driver).catch(() => undefined);
    throw err;
  }
  return { driver, reason };
}

/** The spec a record describes, found in stateDir, with its id (older records lack max_connections). */
function recordedSpec(record: ClusterRecord, stateDir: string): ClusterSpec {
  return {
    ...record.spec,
    maxConnections: record.spec.maxConnections ?? LEGACY_MAX_CONNECTIONS[record.driver],
    stateDir,
    id: record.id,
  };
}

/**
 * `cluster up` as the command runs it: under the cluster's lock; Ctrl-C or SIGTERM while it runs
 * removes what this instance created (by id) and exits 130.
 */
export async function upCluster(opts: {
  driver: DriverChoice;
  spec: ClusterSpec;
  log: (line: string) => void;
}): Promise<{ driver: ClusterDriver; reason: string }> {
  refuseSim(opts.driver);
  const lock = acquireClusterLock(opts.spec.stateDir, opts.spec.name);
  let made: ClusterDriver | undefined;
  // Set on a signal; never resolves (it exits 130), so the up it cuts short cannot exit first.
  let stopping: Promise<never> | undefined;
  const onSignal = (sig: NodeJS.Signals): void => {
    opts.log(`${sig}: removing what this cluster up created`);
    const cleanup = made ? removeOwned(made) : Promise.resolve();
    stopping = cleanup
      .catch((err: unknown) => opts.log(`cleanup failed: ${formatError(err)}`))
      .then(() => {
        lock.release();
        return process.exit(130);
      });
  };
  process.once('SIGINT', onSignal);
  process.once('SIGTERM', onSignal);
  try {
    const up = await bringUp({ ...opts, onRecord: (d) => (made = d) });
    if (stopping) await stopping;
    return up;
  } catch (err) {
    if (stopping) await stopping;
    throw err;
  } finally {
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
    lock.release();
  }
}

/** A positive decimal flag value (e.g. --cpus); a one-line BAD_INPUT error naming the flag otherwise. */
export function parsePositiveNumber(name: string, value: string): number {
  const n = Number(value);
  if (value.trim() === '' || !Number.isFinite(n) || n <= 0) {
    throw new PlbError('BAD_INPUT', `${name}: must be a positive number, got "${value}"`);
  }
  return n;
}
