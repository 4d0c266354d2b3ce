// The conformance test's one local cluster (a primary and one standby) and its proxies, set up so
// every feature of the corpus can run against the standby directly and through the proxy: users
// with a SCRAM, an md5 and no password (trust) and their pg_hba lines, TLS on the standby, and the
// proxy with its defaults (the native relay where built) plus its primary listener (--primary-port:
// the COPY in cell, on the primary both ways) and a proxy with --tls-cert (which moves every client
// of a proxy to Node's sockets, so it serves the TLS cell only).
import { appendFileSync } from 'node:fs';
import { join } from 'node:path';
import pg from 'pg';
import { dataDir } from '../../../src/cluster/state.js';
import {
  startPrimaryListener,
  type PrimaryListenerHandle,
} from '../../../src/proxy/primary/primary-listener.js';
import { primaryServers } from '../../../src/proxy/primary/primary-servers.js';
import type { ProxyHandle } from '../../../src/proxy/proxy-server.js';
import { loadTls } from '../../../src/proxy/protocol/tls-client.js';
import { until } from './common.js';
import { selfSignedCert, startTestProxy, upProxyCluster, type ProxyTestCluster } from '../proxy-setup.js';

export const AUTH_PASSWORD = 'conform-Pw-7';

/** The users of the auth cells, by method; their pg_hba lines go on every server. */
const HBA_LINES = [
  'host all conform_scram 127.0.0.1/32 scram-sha-256',
  'host all conform_md5 127.0.0.1/32 md5',
  'host all conform_trust 127.0.0.1/32 trust',
];

export interface Target {
  /** Where the plain-TCP cells connect. */
  port: number;
  /** Where the TLS cell connects (sslmode=require). */
  tlsPort: number;
  /** Where the COPY in cell connects: the primary, or the proxy's primary listener. */
  primaryPort: number;
}

export interface ConformanceRig {
  cluster: ProxyTestCluster;
  proxy: ProxyHandle;
  primaryListener: PrimaryListenerHandle;
  tlsProxy: ProxyHandle;
  direct: Target;
  proxied: Target;
  logs: string[];
  /** A node-postgres client on a server port as the cluster's user (for the checks). */
  query<T extends pg.QueryResultRow>(port: number, sql: string): Promise<T[]>;
  down(): Promise<void>;
}

export async function upConformanceRig(o: {
  name: string;
  basePort: number;
  proxyPort: number;
  primaryProxyPort: number;
  tlsProxyPort: number;
}): Promise<ConformanceRig> {
  const cluster = await upProxyCluster({ name: o.name, replicas: 1, basePort: o.basePort });
  const logs: string[] = [];
  const replica = cluster.replicas[0]!;
  const primaryPort = o.basePort;
  const query = async <T extends pg.QueryResultRow>(port: number, sql: string): Promise<T[]> => {
    const c = new pg.Client(cluster.pgConfig(port));
    c.on('error', () => undefined);
    await c.connect();
    try {
      return (await c.query<T>(sql)).rows;
    } finally {
      await c.end();
    }
  };
  const rig: Partial<ConformanceRig> = { cluster, logs, query };
  try {
    const pw = AUTH_PASSWORD.replace(/'/g, "''");
    await query(
      primaryPort,
      [
        "set password_encryption = 'scram-sha-256'",
        `create role conform_scram login password '${pw}'`,
        "set password_encryption = 'md5'",
        `create role conform_md5 login password '${pw}'`,
        'create role conform_trust login',
      ].join('; '),
    );
    const rdir = dataDir(cluster.stateDir, o.name, replica.id);
    for (const id of ['primary', replica.id])
      appendFileSync(join(dataDir(cluster.stateDir, o.name, id), 'pg_hba.conf'), HBA_LINES.join('\n') + '\n');
    // TLS on the standby (for the direct side of the TLS cell), taken at a reload.
    selfSignedCert(rdir, 'server', rdir);
    appendFileSync(
      join(rdir, 'plb.conf'),
      "\nssl = on\nssl_cert_file = 'server.crt'\nssl_key_file = 'server.key'\n",
    );
    for (const port of [primaryPort, replica.port]) await query(port, 'select pg_reload_conf()');
    await until('ssl on the standby and the roles replayed', async () => {
      const [r] = await query<{ ssl: string; n: string }>(
        replica.port,
        "select current_setting('ssl') as ssl, (select count(*) from pg_roles where rolname like 'conform_%') as n",
      );
      return r!.ssl === 'on' && Number(r!.n) === 3;
    });
    const log = (l: string): void => void logs.push(l);
    const base = { ...cluster.proxyBase, strategy: 'lc' as const, log };
    rig.proxy = await startTestProxy({ ...base, ports: { premium: o.proxyPort } });
    // As `plb proxy --primary-port` runs it (primary/run-primary.ts), on the test proxy's settings.
    const { primary, servers } = primaryServers(cluster.driver.endpoints());
    rig.primaryListener = await startPrimaryListener({
      servers,
      primary: primary.id,
      connector: cluster.proxyBase.connector,
      host: '127.0.0.1',
      ports: { premium: o.primaryProxyPort },
      classFrom: 'off',
      health: { intervalMs: 500, timeoutMs: 500, fall: 3, rise: 2, hangMs: 5000 },
      statsEveryS: 0,
      log,
    });
    const { cert, key } = selfSignedCert(cluster.stateDir, 'proxy');
    rig.tlsProxy = await startTestProxy({
      ...base,
      ports: { premium: o.tlsProxyPort },
      tls: loadTls(cert, key),
    });
    rig.direct = { port: replica.port, tlsPort: replica.port, primaryPort };
    rig.proxied = { port: o.proxyPort, tlsPort: o.tlsProxyPort, primaryPort: o.primaryProxyPort };
  } catch (e) {
    await Promise.all([rig.proxy?.stop(500), rig.primaryListener?.stop(500), rig.tlsProxy?.stop(500)]);
    await cluster.down();
    throw e;
  }
  rig.down = async () => {
    await Promise.all([rig.proxy?.stop(1000), rig.primaryListener?.stop(1000), rig.tlsProxy?.stop(1000)]);
    await cluster.down();
  };
  return rig as ConformanceRig;
}
