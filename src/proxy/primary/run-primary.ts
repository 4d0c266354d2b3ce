/** The primary listener as `plb proxy` runs it (run.ts): started from the flags, summarised at the stop. */
import type { Connector } from '../../cluster/connector.js';
import { readConnectionSettings } from '../../cluster/server-limits.js';
import type { Credentials, Endpoint } from '../../core/endpoint.js';
import { PlbError } from '../../core/errors.js';
import type { GateCounters } from '../admission/admission-gate.js';
import type { ProxyConfig } from '../options.js';
import type { ClassCounters } from '../stats.js';
import { primaryOf } from './follow.js';
import { startPrimaryListener, type PrimaryListenerHandle } from './primary-listener.js';
import { primaryServers } from './primary-servers.js';

/** What a stopped primary listener reports (in the command's --json output). */
export interface PrimarySummary {
  ports: Record<string, number>;
  /** The server taking primary sessions at the stop (absent: none, or split brain). */
  primary?: string;
  classes: Record<'premium' | 'freemium', ClassCounters>;
  admission: Record<'premium' | 'freemium', GateCounters>;
  limits: Record<string, number>;
}

export interface RunningPrimary {
  handle: PrimaryListenerHandle;
  /** Stops it and says what it did. */
  stop(graceMs: number): Promise<PrimarySummary>;
}

/** The primary listener the flags ask for (undefined: no --primary-port). Logs its lines prefixed. */
export async function startConfiguredPrimary(
  config: ProxyConfig,
  endpoints: readonly Endpoint[],
  creds: Credentials,
  connector: Connector,
  connectLine: (port: number) => string,
  log: (line: string) => void,
): Promise<RunningPrimary | undefined> {
  if (Object.keys(config.primaryPorts).length === 0) return undefined;
  const { primary, servers } = primaryServers(endpoints);
  const endpointOf = (id: string): Endpoint => {
    const e = servers.find((s) => s.id === id);
    if (!e) throw new PlbError('INTERNAL', `no endpoint for ${id}`);
    return e;
  };
  const say = (line: string): void => log(`primary listener: ${line}`);
  const handle = await startPrimaryListener({
    servers,
    primary: primary.id,
    connector,
    host: config.host,
    ports: config.primaryPorts,
    classFrom: config.classFrom,
    health: config.health,
    admission: config.admission,
    settingsOf: (id) => readConnectionSettings(endpointOf(id), creds, config.health.timeoutMs),
    tls: config.tls,
    serverTls: config.serverTls,
    serverHangMs: config.serverHangMs,
    startupTimeoutMs: config.startupTimeoutMs,
    maxClientConn: config.maxClientConn,
    statsEveryS: config.statsEveryS,
    log: say,
  });
  for (const [cls, port] of Object.entries(handle.ports))
    say(`${cls}: listening on ${config.host}:${port}; connect: ${connectLine(port)}`);
  return {
    handle,
    async stop(graceMs) {
      await handle.stop(graceMs);
      say(handle.statsLine());
      const p = primaryOf(handle.follower.current);
      return {
        ports: { ...handle.ports },
        ...(p !== undefined ? { primary: p } : {}),
        classes: handle.stats.classes,
        admission: handle.gate.counters,
        limits: handle.limits() ?? {},
      };
    },
  };
}
