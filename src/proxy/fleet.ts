/**
 * Where `plb proxy`'s servers come from, in one place: a cluster `plb cluster up` made (--name), a
 * cluster file (--cluster-file, the external driver's file with optional per-replica zone and
 * weight) or replicas by address (--replica host:port, credentials from the environment as libpq
 * reads them). Everything after this sees one Fleet.
 */
import { userInfo } from 'node:os';
import { openCluster } from '../cluster/select.js';
import { loadClusterFile } from '../cluster/external/file.js';
import { psqlLine, shellWord } from '../cluster/connect-info.js';
import { DEFAULT_CLUSTER_NAME, passwordFile } from '../cluster/state.js';
import { pgConnector, type Connector } from '../cluster/connector.js';
import { pgSessionCounts, type SessionCountReader } from '../cluster/session-counts.js';
import { formatHostPort, type Credentials, type Endpoint } from '../core/endpoint.js';
import { PlbError } from '../core/errors.js';
import { escapeControl } from '../core/text.js';

/** Which of the three sources the flags (or the config file) name; at most one. */
export interface FleetChoice {
  name?: string | undefined;
  'cluster-file'?: string | undefined;
  replica?: readonly string[] | undefined;
}

export interface Fleet {
  /** For the listening line: "cluster plb (local)", "fleet.yaml", "--replica". */
  label: string;
  /** The primary, when the source names one (--replica names none). */
  primary?: Endpoint;
  /** The read pool, r1..rK. */
  replicas: Endpoint[];
  /** Every server, the primary first when known: what a primary listener picks the writable one from. */
  servers: Endpoint[];
  credentials: Credentials;
  /** Health checks (and nothing else) connect through this. */
  connector: Connector;
  /** Replica -> zone (every replica has one, or this is absent). */
  zones?: Record<string, string>;
  /** Replica -> static weight, where not 1. */
  weights?: Record<string, number>;
  /** The replica view's reader (--router-view replica); absent where the source cannot give it. */
  sessionCounts?: (timeoutMs: number) => SessionCountReader;
  /** A psql line for a listener: plb's own cluster reads its password file; a fleet's is the user's own. */
  connectLine(host: string, port: number): string;
}

/** The flags that name a source, in the words errors use. */
function given(c: FleetChoice): string[] {
  return [
    ...(c.name !== undefined ? ['--name'] : []),
    ...(c['cluster-file'] !== undefined ? ['--cluster-file'] : []),
    ...(c.replica !== undefined && c.replica.length > 0 ? ['--replica'] : []),
  ];
}

/** The one-line refusal of two sources at once (undefined: at most one given). */
export function checkFleetChoice(c: FleetChoice): void {
  const g = given(c);
  if (g.length > 1)
    throw new PlbError(
      'BAD_INPUT',
      `${g.join(' and ')}: give one of --name, --cluster-file or --replica (they name the servers three ways)`,
    );
}

/** `host:port`, `[v6]:port` or `host` (port 5432), as --replica takes it. */
export function parseReplicaAddress(text: string): { host: string; port: number } {
  const bad = (): PlbError =>
    new PlbError('BAD_INPUT', `--replica: "${escapeControl(text)}" must be host:port (e.g. 10.0.0.5:5432)`);
  const m = /^\[([0-9A-Fa-f:.]+)\](?::(\d+))?$/.exec(text) ?? /^([^:\s[\]]+)(?::(\d+))?$/.exec(text);
  if (!m) throw bad();
  const port = m[2] === undefined ? 5432 : Number(m[2]);
  if (!Number.isInteger(port) || port < 1 || port > 65535) throw bad();
  return { host: m[1] as string, port };
}

/**
 * libpq's environment: PGUSER (default the OS user), PGDATABASE (default the user), PGPASSWORD.
 * Without PGPASSWORD the password is left empty and pg reads PGPASSFILE or ~/.pgpass per server.
 */
export function credentialsFromEnv(env: NodeJS.ProcessEnv = process.env): Credentials {
  const user = env['PGUSER'] || userInfo().username;
  return { user, password: env['PGPASSWORD'] ?? '', database: env['PGDATABASE'] || user };
}

function fleetConnectLine(creds: Credentials): (host: string, port: number) => string {
  return (host, port) =>
    `psql ${shellWord(`host=${host} port=${port} user=${creds.user} dbname=${creds.database}`)}`;
}

function withServers(f: Omit<Fleet, 'servers' | 'connector' | 'sessionCounts' | 'connectLine'>): Fleet {
  const servers = [...(f.primary ? [f.primary] : []), ...f.replicas];
  return {
    ...f,
    servers,
    connector: pgConnector(servers, f.credentials),
    sessionCounts: (timeoutMs) => pgSessionCounts(f.replicas, f.credentials, timeoutMs),
    connectLine: fleetConnectLine(f.credentials),
  };
}

/** A cluster file's fleet (the file read and checked here; nothing connects). */
export function fleetFromClusterFile(path: string, env: NodeJS.ProcessEnv = process.env): Fleet {
  const c = loadClusterFile(path, env);
  const zones: Record<string, string> = {};
  const weights: Record<string, number> = {};
  const replicas: Endpoint[] = [];
  let primary: Endpoint | undefined;
  for (const s of c.servers) {
    const ep: Endpoint = { id: s.id, kind: s.kind, host: s.host, port: s.port };
    if (s.kind === 'primary') {
      primary = ep;
      continue;
    }
    replicas.push(ep);
    if (s.zone !== undefined) zones[s.id] = s.zone;
    if (s.weight !== undefined && s.weight !== 1) weights[s.id] = s.weight;
  }
  return withServers({
    label: path,
    ...(primary ? { primary } : {}),
    replicas,
    credentials: { user: c.user, password: c.password, database: c.dbname },
    ...(Object.keys(zones).length > 0 ? { zones } : {}),
    ...(Object.keys(weights).length > 0 ? { weights } : {}),
  });
}

/** --replica host:port ...: r1..rK in the order given, no primary, credentials from the environment. */
export function fleetFromAddresses(
  addresses: readonly string[],
  env: NodeJS.ProcessEnv = process.env,
): Fleet {
  const replicas = addresses.map(
    (a, i): Endpoint => ({ id: `r${i + 1}`, kind: 'replica', ...parseReplicaAddress(a) }),
  );
  const seen = new Map<string, string>();
  for (const r of replicas) {
    const at = formatHostPort(r);
    const before = seen.get(at);
    if (before !== undefined)
      throw new PlbError('BAD_INPUT', `--replica: ${at} is given twice (${before} and ${r.id})`);
    seen.set(at, r.id);
  }
  return withServers({ label: '--replica', replicas, credentials: credentialsFromEnv(env) });
}

/** The servers of a cluster plb made (--name; the default when no source is named). */
async function fleetFromCluster(name: string): Promise<Fleet> {
  const driver = await openCluster(name);
  const endpoints = driver.endpoints();
  const primary = endpoints.find((e) => e.kind === 'primary');
  const replicas = endpoints.filter((e) => e.kind === 'replica');
  const credentials = await driver.credentials();
  const file = passwordFile(driver.spec.stateDir, name);
  return {
    label: `cluster ${name} (${driver.kind})`,
    ...(primary ? { primary } : {}),
    replicas,
    servers: [...(primary ? [primary] : []), ...replicas],
    credentials,
    connector: driver.connector(credentials),
    ...(driver.sessionCounts
      ? {
          sessionCounts: (t: number) =>
            (driver.sessionCounts as NonNullable<typeof driver.sessionCounts>)(credentials, t),
        }
      : {}),
    connectLine: (host, port) => psqlLine(file, host, port),
  };
}

/** The fleet the choice names (the default cluster when it names none); one-line errors. */
export async function resolveFleet(c: FleetChoice, env: NodeJS.ProcessEnv = process.env): Promise<Fleet> {
  checkFleetChoice(c);
  if (c['cluster-file'] !== undefined) return fleetFromClusterFile(c['cluster-file'], env);
  if (c.replica !== undefined && c.replica.length > 0) return fleetFromAddresses(c.replica, env);
  return fleetFromCluster(c.name ?? DEFAULT_CLUSTER_NAME);
}

/** "r1 10.0.0.5:5432 (zone a, weight 2)" per replica, and the primary's. */
export function describeFleet(f: Fleet): string {
  const replica = (r: Endpoint): string => {
    const extra = [
      ...(f.zones?.[r.id] !== undefined ? [`zone ${f.zones[r.id]}`] : []),
      ...(f.weights?.[r.id] !== undefined ? [`weight ${f.weights[r.id]}`] : []),
    ];
    return `${r.id} ${formatHostPort(r)}${extra.length > 0 ? ` (${extra.join(', ')})` : ''}`;
  };
  return `${f.replicas.map(replica).join(', ')}${f.primary ? `; primary ${formatHostPort(f.primary)}` : ''}`;
}
