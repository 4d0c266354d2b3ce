/** `--metrics-port`: the live registry and its server (closed at the end of the command). */
import type { LiveMetrics } from '../metrics/live-metrics.js';
import { startMetricsServer } from '../metrics/metrics-server.js';
import type { RunWriter } from '../metrics/types.js';

export interface LiveServer {
  metrics: LiveMetrics;
  close(): Promise<void>;
}

export async function startLiveMetrics(port: number, warn: (line: string) => void): Promise<LiveServer> {
  // prom-client loads only when asked for (--metrics-port).
  const { createLiveMetrics } = await import('../metrics/live-metrics.js');
  const metrics = createLiveMetrics();
  const server = await startMetricsServer(port, () => metrics.text());
  warn(`live metrics: http://127.0.0.1:${server.port}/metrics`);
  return {
    metrics,
    close: async (): Promise<void> => {
      await server.close();
      metrics.close();
    },
  };
}

/** A run's writer, teed into the live registry when there is one. */
export function withLiveMetrics(
  live: { metrics: LiveMetrics } | null,
  run: { strategy: string; mix: { premium: number; freemium: number } },
  writer: RunWriter,
): RunWriter {
  return live
    ? live.metrics.tee(writer, { strategy: run.strategy, mix: `${run.mix.premium}:${run.mix.freemium}` })
    : writer;
}
