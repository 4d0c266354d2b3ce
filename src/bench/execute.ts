/**
 * The composition root of `plb bench run` / `plb bench matrix`: the flags resolved once
 * (resolve.ts), a cluster leased, the series run and rendered.
 */
import { colourEnabled } from '../core/table-style.js';
import { errorLine, exitCodeOf } from '../core/fail.js';
import { packageVersion } from '../core/package-info.js';
import { createRunWriter } from '../metrics/store/run-writer.js';
import { handleStopSignals, STOP_SIGNALS, type StopSignalDeps } from '../cli/stop-signals.js';
import { leaseCluster, observeWriters } from './cluster-lease.js';
import { collectEnvironment } from './environment.js';
import { parseBenchFlags, type BenchFlagValues, type BenchSettings } from './options/flags.js';
import { startLiveMetrics, withLiveMetrics, type LiveServer } from './live-server.js';
import { resolveBench } from './options/resolve.js';
import { renderOutcome } from './results.js';
import { trackSeries } from './series-progress.js';
import { runSeries } from './series.js';
import { fleetConnections, routersOf } from './router-fleet.js';

type BenchIo = {
  log: (line: string) => void;
  warn: (line: string) => void;
  error?: (err: unknown) => void;
};

/** executeBench from the flags' text (a direct caller's): each group parsed by its own parser. */
export function executeBench(
  flags: BenchFlagValues,
  io: BenchIo,
  names: { strategies: string; mixes: string } = { strategies: 'strategy', mixes: 'mix' },
  signalDeps: Pick<StopSignalDeps, 'exit' | 'target'> = {},
): Promise<number> {
  return executeBenchSettings(() => parseBenchFlags(flags, names), io, names, signalDeps);
}

/**
 * Parses (`parse`: the command's flags, typed) and resolves every flag before anything starts
 * (nothing half-started on bad input), then leases a cluster, runs the series and renders it.
 * Returns the exit code (0; 130, 143 or 129 when stopped by SIGINT, SIGTERM or SIGHUP).
 */
export async function executeBenchSettings(
  parse: () => BenchSettings,
  io: BenchIo,
  names: { strategies: string } = { strategies: 'strategy' },
  signalDeps: Pick<StopSignalDeps, 'exit' | 'target'> = {},
): Promise<number> {
  try {
    const settings = parse();
    const flags = settings.output;
    const bench = resolveBench(settings, names);
    const { plan, workload } = bench.config;
    const { runs, cluster } = bench;
    // With --json, stdout holds the JSON alone.
    (flags.json ? io.warn : io.log)(
      `seed ${bench.seed}; plan ${plan.name} (${plan.duration} s, ${plan.events.length} events); ${runs.length} run(s)`,
    );

    // Several runs: a progress line (done/total, elapsed, ETA) as each starts; a bar at a terminal.
    const progress =
      runs.length > 1
        ? trackSeries({
            total: runs.length,
            planS: plan.duration,
            emit: io.warn,
            bar: colourEnabled(process.stderr),
          })
        : null;
    // First Ctrl-C, SIGTERM or SIGHUP: stop gracefully; the second: exit at once.
    const stop = handleStopSignals({ warn: io.warn, ...signalDeps });
    let outcome;
    let live: LiveServer | null = null;
    try {
      // Before the cluster: a port in use is one line and nothing started.
      if (flags.metricsPort !== undefined) live = await startLiveMetrics(flags.metricsPort, io.warn);
      const lease = await leaseCluster({
        name: cluster.name,
        driver: cluster.driver,
        replicas: plan.replicas,
        sessions: workload.model === 'closed' ? workload.clients : workload.maxOpenSessions,
        sessionsField: workload.model === 'closed' ? '--clients' : '--model open (max open sessions)',
        plbConnections: fleetConnections(routersOf(bench.config)),
        over: { basePort: cluster.basePort, ...(cluster.cpus !== undefined ? { cpus: cluster.cpus } : {}) },
        keep: cluster.keep,
        log: io.warn,
        join: (bench.config.routers?.workerIndex ?? 0) > 0,
        ...(cluster.calibration !== undefined ? { calibration: cluster.calibration } : {}),
        ...(cluster.simCpu !== undefined ? { simCpu: cluster.simCpu } : {}),
        ...(cluster.external ? { external: cluster.external } : {}),
      });
      const simClock = lease.sim?.clock;
      try {
        outcome = await runSeries({
          // What only the leased cluster can say: versions, where it ran, its quotas.
          config: {
            plbVersion: packageVersion(),
            environment: await collectEnvironment(lease.driver),
            driver: lease.driver.kind,
            cpusEnforced: lease.driver.cpusEnforced,
            ...lease.config,
            ...bench.config,
            cluster: lease.spec,
            replicaCpus: lease.spec.cpus,
          },
          runs,
          progressEveryS: flags.progress,
          driver: lease.driver,
          createWriter: observeWriters(lease, (run, index) => {
            progress?.runStarted(index);
            return (ids) =>
              withLiveMetrics(
                live,
                run,
                createRunWriter({
                  outDir: flags.out,
                  strategy: run.strategy,
                  plan: plan.name,
                  seed: run.seed,
                  clients: workload.clients,
                  mix: run.mix,
                  replicas: ids,
                  refWindowS: plan.referenceWindow,
                  warmupS: plan.warmup,
                  // Simulated: the start time is virtual (ms since the series began), so a seed repeats.
                  ...(simClock ? { clock: () => new Date(simClock.sinceCreated()) } : {}),
                }),
              );
          }),
          log: io.warn,
          signal: stop.signal,
          ...(bench.autoThink ? { autoThink: bench.autoThink } : {}),
        });
      } finally {
        await lease.release();
      }
    } finally {
      stop.dispose();
      await live?.close();
    }
    if (!outcome.interrupted) progress?.finished();
    await renderOutcome(outcome.results, bench.strategies, runs.length, flags.json, flags.wide, io);
    for (const r of outcome.results) {
      io.warn(`run directory: ${r.dir}${r.summary.complete ? '' : ' (incomplete)'}`);
    }
    return outcome.interrupted ? (stop.code() ?? STOP_SIGNALS.SIGINT) : 0;
  } catch (err) {
    if (io.error) io.error(err);
    else io.warn(`Error: ${errorLine(err)}`);
    return exitCodeOf(err);
  }
}
