/** `plb proxy` as the command runs it: flags -> the cluster's replicas -> listeners, until a stop signal. */
import { handleStopSignals, type StopSignalDeps } from '../bench/stop-signals.js';
import { openCluster } from '../cluster/select.js';
import { formatError } from '../errors.js';
import { parseProxyFlags, type ProxyFlagValues } from './options.js';
import { startProxy } from './proxy-server.js';

export interface ProxyIo {
  log: (line: string) => void;
  warn: (line: string) => void;
}

/**
 * Runs the proxy in front of the named cluster's replicas until SIGINT/SIGTERM/SIGHUP; then stops
 * gracefully (a second signal exits at once). Returns the exit code: 0 after a stop, 1 on error.
 */
export async function executeProxy(
  flags: ProxyFlagValues,
  io: ProxyIo,
  signalDeps: Pick<StopSignalDeps, 'exit' | 'target'> = {},
): Promise<number> {
  try {
    const config = parseProxyFlags(flags);
    const driver = await openCluster(config.name);
    const replicas = driver.endpoints().filter((e) => e.kind === 'replica');
    const creds = await driver.credentials();
    const stop = handleStopSignals({ warn: io.warn, ...signalDeps });
    try {
      const proxy = await startProxy({
        replicas,
        connector: driver.connector(creds),
        host: config.host,
        ports: config.ports,
        classFrom: config.classFrom,
        strategy: config.strategy,
        reference: config.reference,
        partition: config.partition,
        slowStartMs: config.slowStartMs,
        borrowing: config.borrowing,
        health: config.health,
        statsEveryS: config.statsEveryS,
        log: io.log,
      });
      for (const cls of ['premium', 'freemium'] as const) {
        const port = proxy.ports[cls];
        if (port !== undefined) io.log(`${cls}: listening on ${config.host}:${port}`);
      }
      io.log(
        `cluster ${config.name} (${driver.kind}): ${replicas.map((r) => `${r.id}:${r.port}`).join(' ')}; ` +
          `strategy ${config.strategy}; class from ${config.classFrom === 'off' ? 'the port' : `the port or ${config.classFrom}`}`,
      );
      await new Promise<void>((resolve) =>
        stop.signal.addEventListener('abort', () => resolve(), { once: true }),
      );
      await proxy.stop(config.stopTimeoutMs);
      io.log(proxy.statsLine());
      return 0;
    } finally {
      stop.dispose();
    }
  } catch (err) {
    io.warn(`Error: ${formatError(err)}`);
    return 1;
  }
}
