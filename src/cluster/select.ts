/**
 * Choosing a driver (auto = Docker when its socket answers, else local) and reopening an existing
 * cluster from its state record.
 */
import type { ClusterDriver, ClusterSpec } from './driver.js';
import { PlbError } from '../errors.js';
import { createLocalDriver } from './local/index.js';
import {
  DEFAULT_CLUSTER_NAME,
  defaultStateDir,
  readClusterRecord,
  validateClusterName,
  writeClusterRecord,
  type ClusterRecord,
  type DriverKind,
} from './state.js';
import { MAX_MAX_CONNECTIONS, MIN_MAX_CONNECTIONS, memoryForConnections } from './sizing.js';

export type DriverChoice = 'auto' | DriverKind;

export const DEFAULT_REPLICAS = 5;
export const DEFAULT_BASE_PORT = 55432;
/** Per-replica CPU quota: five replicas plus the primary and the client fit two cores. */
export const DEFAULT_CPUS = 0.25;
export const DEFAULT_PRIMARY_CPUS = 0.5;
/** The image's historical default; `cluster up --max-connections` or a bench's sizing raise it. */
export const DEFAULT_MAX_CONNECTIONS = 200;
/** Where a record from before max_connections was recorded: what each driver used then. */
const LEGACY_MAX_CONNECTIONS: Record<DriverKind, number> = { docker: 200, local: 100 };

/** A full spec from the given fields and the defaults; checks the numbers. */
export function clusterSpec(over: Partial<ClusterSpec> = {}): ClusterSpec {
  const spec: ClusterSpec = {
    name: over.name ?? DEFAULT_CLUSTER_NAME,
    replicas: over.replicas ?? DEFAULT_REPLICAS,
    basePort: over.basePort ?? DEFAULT_BASE_PORT,
    cpus: over.cpus ?? DEFAULT_CPUS,
    primaryCpus: over.primaryCpus ?? DEFAULT_PRIMARY_CPUS,
    maxConnections: over.maxConnections ?? DEFAULT_MAX_CONNECTIONS,
    memoryMb: over.memoryMb ?? memoryForConnections(over.maxConnections ?? DEFAULT_MAX_CONNECTIONS),
    stateDir: over.stateDir ?? defaultStateDir(),
    ...(over.image !== undefined ? { image: over.image } : {}),
  };
  validateClusterName(spec.name);
  if (!Number.isInteger(spec.replicas) || spec.replicas < 1 || spec.replicas > 32) {
    throw new PlbError('BAD_INPUT', `replicas: must be an integer from 1 to 32, got ${spec.replicas}`);
  }
  if (!Number.isInteger(spec.basePort) || spec.basePort < 1024 || spec.basePort + spec.replicas > 65535) {
    throw new PlbError(
      'BAD_INPUT',
      `base-port: must be an integer from 1024 with room for ${spec.replicas} more ports`,
    );
  }
  if (!(spec.cpus > 0)) throw new PlbError('BAD_INPUT', `cpus: must be > 0, got ${spec.cpus}`);
  if (!(spec.primaryCpus > 0))
    throw new PlbError('BAD_INPUT', `primary-cpus: must be > 0, got ${spec.primaryCpus}`);
  if (!Number.isInteger(spec.memoryMb) || spec.memoryMb < 64) {
    throw new PlbError('BAD_INPUT', `memory: must be an integer of at least 64 MiB, got ${spec.memoryMb}`);
  }
  if (
    !Number.isInteger(spec.maxConnections) ||
    spec.maxConnections < MIN_MAX_CONNECTIONS ||
    spec.maxConnections > MAX_MAX_CONNECTIONS
  ) {
    throw new PlbError(
      'BAD_INPUT',
      `max-connections: must be an integer from ${MIN_MAX_CONNECTIONS} to ${MAX_MAX_CONNECTIONS}, got ${spec.maxConnections}`,
    );
  }
  return spec;
}

export function parseDriverChoice(value: string): DriverChoice {
  if (value === 'auto' || value === 'docker' || value === 'local') return value;
  throw new PlbError('BAD_INPUT', `driver: must be auto, docker or local, got "${value}"`);
}

/** Pure part of the choice: which kind, and a sentence saying why. */
export function chooseDriverKind(
  requested: DriverChoice,
  dockerUp: boolean | undefined,
): { kind: DriverKind; reason: string } {
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
  createDockerDriver(spec: ClusterSpec): ClusterDriver;
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

export async function dockerAnswers(): Promise<boolean> {
  const mod = await dockerModule();
  if (!mod) return false;
  try {
    return await mod.dockerAvailable();
  } catch {
    return false;
  }
}

export function createDriver(kind: DriverKind, spec: ClusterSpec): Promise<ClusterDriver> {
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
  name: string = DEFAULT_CLUSTER_NAME,
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
 * Removes everything of a cluster, with or without a record: the recorded driver's down, plus the
 * local data folder and, when Docker answers, containers by label (leftovers of a crashed run).
 * Returns what it did, one line each.
 */
export async function downCluster(
  name: string = DEFAULT_CLUSTER_NAME,
  stateDir: string = defaultStateDir(),
): Promise<string[]> {
  validateClusterName(name);
  const done: string[] = [];
  const record = readClusterRecord(stateDir, name);
  const spec = record ? recordedSpec(record, stateDir) : clusterSpec({ name, stateDir });
  if (record?.driver === 'docker' || (await dockerAnswers())) {
    const d = await createDocker(spec);
    await d.down();
    done.push(`docker: removed any containers labelled plb.cluster=${name}`);
  }
  await createLocalDriver(spec).down();
  done.push(
    record ? `removed cluster ${name} (${record.driver})` : `no record of cluster ${name}; cleaned leftovers`,
  );
  return done;
}

/**
 * `cluster up`: choose the driver, bring the cluster up, and make sure a record names the driver
 * (the local driver writes its own first; written here for any driver that did not).
 */
export async function bringUp(opts: {
  driver: DriverChoice;
  spec: ClusterSpec;
  log?: (line: string) => void;
}): Promise<{ driver: ClusterDriver; reason: string }> {
  const log = opts.log ?? (() => undefined);
  const existing = readClusterRecord(opts.spec.stateDir, opts.spec.name);
  if (existing && opts.driver !== 'auto' && existing.driver !== opts.driver) {
    throw new PlbError(
      'CLUSTER_UP_FAILED',
      `cluster ${opts.spec.name} already exists with the ${existing.driver} driver`,
      {
        hint: `run \`plb cluster down --name ${opts.spec.name}\` first, or use another --name`,
      },
    );
  }
  // An existing cluster keeps its driver (auto must not switch it) and its recorded spec; its
  // driver's up then starts what is not running.
  const { driver, reason } = existing
    ? {
        driver: await createDriver(existing.driver, recordedSpec(existing, opts.spec.stateDir)),
        reason: `${existing.driver} driver (existing cluster ${existing.name}, its recorded spec)`,
      }
    : await resolveDriver({ driver: opts.driver, spec: opts.spec });
  log(`using the ${reason}`);
  await driver.up(log);
  if (!readClusterRecord(opts.spec.stateDir, opts.spec.name)) {
    writeClusterRecord(opts.spec.stateDir, {
      version: 1,
      name: opts.spec.name,
      driver: driver.kind,
      spec: driver.spec,
      createdAt: new Date().toISOString(),
    });
  }
  return { driver, reason };
}

/** The spec a record describes, found in stateDir (older records lack max_connections). */
function recordedSpec(record: ClusterRecord, stateDir: string): ClusterSpec {
  return {
    ...record.spec,
    maxConnections: record.spec.maxConnections ?? LEGACY_MAX_CONNECTIONS[record.driver],
    stateDir,
  };
}

/** A positive decimal flag value (e.g. --cpus); a one-line BAD_INPUT error naming the flag otherwise. */
export function parsePositiveNumber(name: string, value: string): number {
  const n = Number(value);
  if (value.trim() === '' || !Number.isFinite(n) || n <= 0) {
    throw new PlbError('BAD_INPUT', `${name}: must be a positive number, got "${value}"`);
  }
  return n;
}
