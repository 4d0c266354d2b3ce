/**
 * `--strategy via`: a real balancer (HAProxy, PgBouncer or pgcat in session mode, `plb proxy`) as a
 * baseline. Sessions connect to its endpoint instead of a replica the embedded router picked; the
 * session's first statement asks the backend who it is, and from then on the session counts on
 * that replica, so per-replica metrics, reports and phases work as for the router's strategies.
 * The health checker still runs (detection events), but routing is the balancer's.
 */
import type { Connector, DbConnection, OpenOptions } from '../cluster/connector.js';
import { openPgClient, pgConnection } from '../cluster/connector.js';
import type { Credentials, Endpoint } from '../core/endpoint.js';
import { PlbError } from '../core/errors.js';
import type { ServiceClass } from '../core/service-class.js';
import { SERVICE_CLASSES } from '../core/service-class.js';
import type { SessionRouter } from '../router/types.js';
import { formatHostPort, type HostPort } from '../core/endpoint.js';
import type { BenchConfig } from '../run-format/config.js';
import { VIA } from '../router/strategy-registry.js';

/** Where each class's sessions connect (one endpoint for both, or one per class). */
export type ViaEndpoints = Record<ServiceClass, HostPort>;

export interface ViaOptions {
  /** Names the balancer in reports: the strategy is `via:<label>`. */
  label: string;
  endpoints: ViaEndpoints;
}

/** The series' name of a via run: `via:<label>` (run ids, summaries, report groups). */
export function viaStrategy(label: string): string {
  return `${VIA}:${label}`;
}

export function isViaStrategy(strategy: string): boolean {
  return strategy === VIA || strategy.startsWith(`${VIA}:`);
}

export function parseHostPort(text: string, field: string): HostPort {
  const m = /^\s*([A-Za-z0-9.-]+|\[[0-9A-Fa-f:]+\]):(\d{1,5})\s*$/.exec(text);
  const port = m ? Number(m[2]) : NaN;
  if (!m || !(port >= 1 && port <= 65535))
    throw new PlbError('BAD_INPUT', `${field}: expected host:port like 127.0.0.1:33500 (got "${text}")`);
  return { host: (m[1] as string).replace(/^\[|\]$/g, ''), port };
}

/** 'host:port' (both classes) or 'premium=host:port,freemium=host:port'. */
export function parseVia(text: string, field = '--via'): ViaEndpoints {
  if (!text.includes('=')) {
    const at = parseHostPort(text, field);
    return { premium: at, freemium: { ...at } };
  }
  const out: Partial<ViaEndpoints> = {};
  for (const part of text.split(',')) {
    const [cls, at] = part.split('=', 2).map((s) => s.trim());
    if (cls !== 'premium' && cls !== 'freemium')
      throw new PlbError(
        'BAD_INPUT',
        `${field}: expected premium=host:port,freemium=host:port (got "${text}")`,
      );
    if (out[cls]) throw new PlbError('BAD_INPUT', `${field}: ${cls} is given twice`);
    out[cls] = parseHostPort(at ?? '', field);
  }
  for (const cls of SERVICE_CLASSES)
    if (!out[cls]) throw new PlbError('BAD_INPUT', `${field}: no endpoint for ${cls} (give both classes)`);
  return out as ViaEndpoints;
}

/** A label that stays readable in run ids and tables. */
export function parseViaLabel(text: string, field = '--via-label'): string {
  if (!/^[A-Za-z0-9][A-Za-z0-9._:-]{0,39}$/.test(text))
    throw new PlbError('BAD_INPUT', `${field}: letters, digits and . _ : - only, at most 40 (got "${text}")`);
  return text;
}

/** How config.json records a via balancer: its endpoints as host:port text. */
export function viaRecord(via: ViaOptions): NonNullable<BenchConfig['via']> {
  return {
    label: via.label,
    endpoints: {
      premium: formatHostPort(via.endpoints.premium),
      freemium: formatHostPort(via.endpoints.freemium),
    },
  };
}

/** The balancer a run's config names. */
export function viaOptionsOf(record: NonNullable<BenchConfig['via']>): ViaOptions {
  return {
    label: record.label,
    endpoints: {
      premium: parseHostPort(record.endpoints.premium, 'via.endpoints.premium'),
      freemium: parseHostPort(record.endpoints.freemium, 'via.endpoints.freemium'),
    },
  };
}

/** The default label: the endpoint (one), or both (premium first). */
export function defaultViaLabel(endpoints: ViaEndpoints): string {
  const p = formatHostPort(endpoints.premium);
  const q = formatHostPort(endpoints.freemium);
  return p === q ? p : `${p},${q}`;
}

/** What the connector opens for a class's via session (never a replica id). */
export function viaTarget(cls: ServiceClass): string {
  return `${VIA}:${cls}`;
}

/**
 * The runner's router for a via run: admission names the class's endpoint (the balancer chooses),
 * and the session is counted on the replica it landed on once it said which (landed). Health
 * changes only mark replicas in the snapshot. Every replica reports role mixed: the balancer's
 * own partitions, if it has any, are not known here.
 */
export class ViaAdmissions implements SessionRouter {
  private readonly replicas = new Map<
    string,
    { healthy: boolean; sessions: { premium: number; freemium: number } }
  >();

  constructor(ids: readonly string[]) {
    for (const id of ids) this.replicas.set(id, { healthy: true, sessions: { premium: 0, freemium: 0 } });
  }

  admit(cls: ServiceClass): { replica: string } {
    return { replica: viaTarget(cls) };
  }

  landed(_target: string, replica: string, cls: ServiceClass): void {
    const r = this.replicas.get(replica);
    if (r) r.sessions[cls] += 1;
  }

  release(replica: string, cls: ServiceClass): void {
    const r = this.replicas.get(replica);
    if (r && r.sessions[cls] > 0) r.sessions[cls] -= 1;
  }

  markDown(replica: string): void {
    const r = this.replicas.get(replica);
    if (r) r.healthy = false;
  }

  markUp(replica: string): void {
    const r = this.replicas.get(replica);
    if (r) r.healthy = true;
  }

  snapshot(): Array<{
    id: string;
    healthy: boolean;
    role: string;
    sessions: { premium: number; freemium: number };
  }> {
    return [...this.replicas].map(([id, r]) => ({
      id,
      healthy: r.healthy,
      role: 'mixed',
      sessions: { ...r.sessions },
    }));
  }
}

/** The identity query: plb's servers set cluster_name plb-<id>; the port is the fallback. */
const WHO = "select current_setting('cluster_name') as name, inet_server_port() as port";

/**
 * Which replica answered: cluster_name `plb-<id>` when it names one of ours, else the server's
 * port among the replicas' (a cluster made before plb set cluster_name). Undefined: not a replica.
 */
export function identifyReplica(
  who: { name: string | null; port: number | null },
  replicas: readonly Endpoint[],
): string | undefined {
  const named = who.name?.startsWith('plb-') ? who.name.slice(4) : undefined;
  if (named !== undefined && replicas.some((r) => r.id === named)) return named;
  return replicas.find((r) => r.port === who.port)?.id;
}

/**
 * Replica ids go to the cluster's own connector (health checks); a via target goes to the class's
 * endpoint, asks who answered, and reports it as the connection's server.
 */
export function viaConnector(
  base: Connector,
  via: ViaOptions,
  creds: Credentials,
  replicas: readonly Endpoint[],
): Connector {
  return {
    async open(server: string, opts: OpenOptions): Promise<DbConnection> {
      const cls = SERVICE_CLASSES.find((c) => viaTarget(c) === server);
      if (cls === undefined) return base.open(server, opts);
      const at = via.endpoints[cls];
      const client = await openPgClient(at, creds, opts);
      const conn = pgConnection(client);
      let who: { name: string | null; port: number | null };
      try {
        const r = await client.query<{ name: string | null; port: number | null }>(WHO);
        who = r.rows[0] ?? { name: null, port: null };
      } catch (err) {
        await conn.end(0);
        throw err;
      }
      const id = identifyReplica(who, replicas);
      if (id === undefined) {
        await conn.end(0);
        throw new PlbError(
          'CONNECT_FAILED',
          `${formatHostPort(at)} (via ${via.label}) answered from a server that is not a replica of this cluster (cluster_name "${who.name ?? ''}", port ${who.port ?? '?'})`,
          {
            hint: 'point the balancer at the replicas of this cluster (plb haproxy-config, plb pgpool-config)',
          },
        );
      }
      return pgConnection(client, id);
    },
  };
}
