/**
 * What the `plb proxy --cluster-file` integration tests share: the command's flags at their
 * defaults, a cluster file naming a local cluster's servers as a user would write it, clients, and
 * waiting for a line of the proxy's log.
 */
import { writeFileSync } from 'node:fs';
import pg from 'pg';
import { passwordFile } from '../../src/cluster/state.js';
import { proxyFlags, type ProxyFlagValues } from '../../src/proxy/options.js';
import { sleep, type ProxyTestCluster } from './proxy-setup.js';

/** Every flag at its default (as the command line would give them), then `over`. */
export function proxyFlagsWith(over: Partial<ProxyFlagValues>): ProxyFlagValues {
  const out: Record<string, unknown> = {};
  for (const [k, f] of Object.entries(proxyFlags)) {
    const d = (f as { default?: unknown }).default;
    if (d !== undefined && typeof d !== 'function') out[k] = d;
  }
  return { ...out, ...over } as ProxyFlagValues;
}

/** The cluster file at `path`: the cluster's primary and the replicas `ids` (as it names them), then `extra` lines. */
export function writeFleetFile(
  path: string,
  c: { cluster: ProxyTestCluster; name: string; primaryPort: number },
  ids: readonly string[],
  extra: readonly string[] = [],
): void {
  const portOf = (id: string): number => c.cluster.replicas.find((r) => r.id === id)!.port;
  writeFileSync(
    path,
    [
      `user: ${c.cluster.creds.user}`,
      `dbname: ${c.cluster.creds.database}`,
      `password: { file: ${passwordFile(c.cluster.stateDir, c.name)} }`,
      `primary: { host: 127.0.0.1, port: ${c.primaryPort} }`,
      'replicas:',
      ...ids.map((id) => `  ${id}: { host: 127.0.0.1, port: ${portOf(id)} }`),
      ...extra,
      '',
    ].join('\n'),
  );
}

/** A connected client (kept in `clients` for the test's cleanup). */
export async function openClient(
  cluster: ProxyTestCluster,
  clients: pg.Client[],
  port: number,
): Promise<pg.Client> {
  const c = new pg.Client(cluster.pgConfig(port));
  c.on('error', () => undefined);
  clients.push(c);
  await c.connect();
  return c;
}

export const serverPort = async (c: pg.Client): Promise<number> =>
  Number((await c.query<{ p: number }>('select inet_server_port() as p')).rows[0]!.p);

/** Waits (bounded) for a line of `logs` from index `from` on matching re; its text. */
export async function logLine(logs: readonly string[], re: RegExp, from = 0, ms = 20_000): Promise<string> {
  for (let t = 0; t < ms; t += 100) {
    const hit = logs.slice(from).find((l) => re.test(l));
    if (hit !== undefined) return hit;
    await sleep(100);
  }
  throw new Error(`no log line ${re} in:\n${logs.join('\n')}`);
}
