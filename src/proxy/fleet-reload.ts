/**
 * The proxy's settings as a whole (the command line over --config over the defaults, and the fleet
 * they name), `--check`'s line, and SIGHUP's reload: the config file and the cluster file read
 * again, and the replicas added (they serve once their checks pass), removed (they drain: no new
 * sessions, the open ones go on), brought back or reweighted, sessions kept. A replica is known
 * by its address. A reload that does not check out changes nothing and says why in one line.
 */
import { primaryServers } from './primary/primary-servers.js';
import { formatHostPort, type Endpoint } from '../core/endpoint.js';
import { errorText, PlbError } from '../core/errors.js';
import type { ReplicaWeights } from '../router/lag-weight.js';
import { atFileLine, loadProxyConfigFile, mergeProxyFlags } from './config-file.js';
import { describeFleet, resolveFleet, type Fleet } from './fleet.js';
import { parseProxyFlags, type ProxyConfig, type ProxyFlagValues } from './options.js';

export interface ProxySettings {
  config: ProxyConfig;
  fleet: Fleet;
}

/** Reads --config (when given), merges it under the command line, checks it all and resolves the fleet. */
export async function resolveSettings(
  cli: ProxyFlagValues,
  explicit: ReadonlySet<string>,
  env: NodeJS.ProcessEnv = process.env,
): Promise<ProxySettings> {
  const file = cli.config !== undefined ? await loadProxyConfigFile(cli.config) : undefined;
  const flags = mergeProxyFlags(cli, explicit, file);
  let config: ProxyConfig;
  try {
    config = parseProxyFlags(flags);
  } catch (err) {
    throw atFileLine(err, file, explicit);
  }
  const fleet = await resolveFleet(config.fleet, env).catch((err: unknown) => {
    throw atFileLine(err, file, explicit);
  });
  if (config.zone !== undefined && !fleet.zones)
    throw atFileLine(
      new PlbError('BAD_INPUT', '--zone: the replicas have no zones (zone: in the cluster file)'),
      file,
      explicit,
    );
  if (config.zone !== undefined && !Object.values(fleet.zones ?? {}).includes(config.zone))
    throw atFileLine(
      new PlbError(
        'BAD_INPUT',
        `--zone: no replica is in zone ${config.zone} (zones: ${[...new Set(Object.values(fleet.zones ?? {}))].join(', ')})`,
      ),
      file,
      explicit,
    );
  // Before anything listens, and in --check: the primary listener needs the servers' primary.
  if (Object.keys(config.primaryPorts).length > 0)
    try {
      primaryServers(fleet.servers);
    } catch (err) {
      throw atFileLine(err, file, explicit);
    }
  return { config, fleet };
}

/** `--check`'s one line: what would listen in front of what. */
export function checkLine(s: ProxySettings, configPath: string | undefined): string {
  const { config, fleet } = s;
  const ports = (['premium', 'freemium'] as const)
    .filter((c) => config.ports[c] !== undefined)
    .map((c) => `${c} ${config.host}:${config.ports[c]}`)
    .join(', ');
  return (
    `ok: ${configPath !== undefined ? `${configPath}: ` : ''}${ports} -> ${fleet.label}: ${describeFleet(fleet)}; ` +
    `strategy ${config.strategy}${config.zone !== undefined ? `; zone ${config.zone}` : ''}`
  );
}

/** What a reload changes: ids are the proxy's (an added replica's is its file's, unless taken). */
export interface ReloadPlan {
  add: ReplicaToAdd[];
  retire: string[];
  restore: string[];
  reweight: { id: string; weight: number }[];
}

/** A replica new to the proxy: its endpoint under the proxy's id, and its id in `next`'s file. */
interface ReplicaToAdd {
  endpoint: Endpoint;
  fileId: string;
  weight: number;
  zone?: string;
}

export interface FleetNow {
  /** The replicas the proxy has (its router's): those it started with, then those reloads added. */
  replicas: readonly Endpoint[];
  retired: ReadonlySet<string>;
  weights: Readonly<Record<string, number>>;
  zones: Readonly<Record<string, string>> | undefined;
}

/** The file's id when the proxy has no replica of that id, else the first free `<id>-2`, `<id>-3`... */
function freeId(id: string, taken: ReadonlySet<string>): string {
  if (!taken.has(id)) return id;
  let n = 2;
  while (taken.has(`${id}-${n}`)) n += 1;
  return `${id}-${n}`;
}

/**
 * What turns the running fleet into `next` (pure). A replica is matched by its address, so a file
 * that numbers its replicas anew keeps each one's sessions; an address the proxy does not have is
 * added. Throws (one line) what a reload cannot do: move a replica to another zone, add one with
 * a zone to a proxy without zones (or without one to a proxy with zones), leave no replica.
 */
export function planReload(now: FleetNow, next: Fleet): ReloadPlan {
  const byAddress = new Map(now.replicas.map((r) => [formatHostPort(r), r.id] as const));
  const taken = new Set(now.replicas.map((r) => r.id));
  const keep = new Map<string, Endpoint>();
  const plan: ReloadPlan = { add: [], retire: [], restore: [], reweight: [] };
  for (const r of next.replicas) {
    const at = `${next.label}: ${r.id} ${formatHostPort(r)}`;
    const id = byAddress.get(formatHostPort(r));
    const zone = next.zones?.[r.id];
    if (id === undefined) {
      if ((now.zones === undefined) !== (zone === undefined))
        throw new PlbError(
          'BAD_INPUT',
          `${at}: ${zone === undefined ? 'no zone, but the replicas have zones' : `zone ${zone}, but the replicas have no zones`}: zones change with a restart`,
        );
      const pid = freeId(r.id, taken);
      taken.add(pid);
      plan.add.push({
        endpoint: { ...r, id: pid },
        fileId: r.id,
        weight: next.weights?.[r.id] ?? 1,
        ...(zone !== undefined ? { zone } : {}),
      });
      continue;
    }
    const was = now.zones?.[id];
    if (was !== zone)
      throw new PlbError(
        'BAD_INPUT',
        `${at}: zone ${zone ?? '(none)'}, was ${was ?? '(none)'}: zones change with a restart`,
      );
    keep.set(id, r);
  }
  if (keep.size === 0 && plan.add.length === 0)
    throw new PlbError('BAD_INPUT', `${next.label}: no replica left`);
  for (const r of now.replicas) {
    const n = keep.get(r.id);
    if (!n) {
      if (!now.retired.has(r.id)) plan.retire.push(r.id);
      continue;
    }
    if (now.retired.has(r.id)) plan.restore.push(r.id);
    const weight = next.weights?.[n.id] ?? 1;
    if (weight !== (now.weights[r.id] ?? 1)) plan.reweight.push({ id: r.id, weight });
  }
  return plan;
}

/** The settings a reload cannot change in a running proxy, when they differ (listed, not applied). */
export function unapplied(was: ProxyConfig, next: ProxyConfig): string[] {
  const same = (a: unknown, b: unknown): boolean => JSON.stringify(a) === JSON.stringify(b);
  const { fleet: _a, ...a } = was;
  const { fleet: _b, ...b } = next;
  return Object.keys({ ...a, ...b }).filter(
    (k) => !same((a as Record<string, unknown>)[k], (b as Record<string, unknown>)[k]),
  );
}

export interface ReloadDeps {
  cli: ProxyFlagValues;
  explicit: ReadonlySet<string>;
  started: ProxySettings;
  proxy: {
    retire(id: string): void;
    restore(id: string): void;
    sessionsOn(id: string): number;
    /** Why `add` would refuse the replica (undefined: it would not); asked before anything changes. */
    addRefusal(replica: Endpoint): string | undefined;
    /** A replica joins; `fleet` is the one the reload read (its connector and credentials reach it). */
    add(replica: ReplicaToAdd, fleet: Fleet): void;
  };
  weights: ReplicaWeights;
  log: (line: string) => void;
}

/** SIGHUP's handler: reads everything again and applies what changed, or logs why nothing did. */
export function fleetReloader(d: ReloadDeps): () => Promise<void> {
  const retired = new Set<string>();
  const weights: Record<string, number> = { ...d.started.fleet.weights };
  const replicas: Endpoint[] = [...d.started.fleet.replicas];
  const zones = d.started.fleet.zones && { ...d.started.fleet.zones };
  let running: Promise<void> = Promise.resolve();
  const once = async (): Promise<void> => {
    let plan: ReloadPlan;
    let later: string[];
    let next: ProxySettings;
    try {
      next = await resolveSettings(d.cli, d.explicit);
      plan = planReload({ replicas, retired, weights, zones }, next.fleet);
      for (const a of plan.add) {
        const refused = d.proxy.addRefusal(a.endpoint);
        if (refused !== undefined)
          throw new PlbError(
            'BAD_INPUT',
            `${next.fleet.label}: ${a.fileId} ${formatHostPort(a.endpoint)}: ${refused}`,
          );
      }
      later = unapplied(d.started.config, next.config);
    } catch (err) {
      d.log(`reload: nothing changed: ${errorText(err)}`);
      return;
    }
    for (const a of plan.add) {
      d.proxy.add(a, next.fleet);
      replicas.push(a.endpoint);
      if (zones && a.zone !== undefined) zones[a.endpoint.id] = a.zone;
      weights[a.endpoint.id] = a.weight;
      d.weights.setBase(a.endpoint.id, a.weight);
    }
    for (const id of plan.retire) {
      retired.add(id);
      d.proxy.retire(id);
    }
    for (const id of plan.restore) {
      retired.delete(id);
      d.proxy.restore(id);
    }
    for (const { id, weight } of plan.reweight) {
      weights[id] = weight;
      d.weights.setBase(id, weight);
    }
    const parts = [
      ...plan.add.map(
        (a) =>
          `${a.endpoint.id} ${formatHostPort(a.endpoint)} added${a.fileId !== a.endpoint.id ? ` (${a.fileId} in the file)` : ''} (serves once its checks pass)`,
      ),
      ...plan.retire.map((id) => `${id} removed (draining ${d.proxy.sessionsOn(id)} session(s))`),
      ...plan.restore.map((id) => `${id} back`),
      ...plan.reweight.map(({ id, weight }) => `${id} weight ${weight}`),
    ];
    d.log(
      `reload: ${parts.length > 0 ? parts.join(', ') : 'no replica changed'}` +
        (later.length > 0 ? `; not applied (a restart applies them): ${later.join(', ')}` : ''),
    );
  };
  // Signals in a burst: one reload after another, never two at once.
  return () => (running = running.then(once));
}
