/**
 * `--lag-weights` / `--max-lag` in the proxy: every replica's lag read once a second from its own
 * replay position and timestamp (cluster/replay-lag.ts; no replication slot names, so any fleet),
 * turned into a weight factor and given to the router through ReplicaWeights, with the static
 * weights (a cluster file's `weight:`, a reload's) as the base. A change is one log line.
 */
import type { Credentials, Endpoint } from '../core/endpoint.js';
import { ReplayLagProbe } from '../cluster/replay-lag.js';
import { lagWeight, type ReplicaWeights } from '../router/lag-weight.js';
import { maxLagFactor } from '../router/max-lag.js';
import type { LagRule } from './options.js';

const SAMPLE_EVERY_MS = 1000;

export interface LagSource {
  stop(): Promise<void>;
}

export function startLagSource(o: {
  primary: Endpoint | undefined;
  replicas: readonly Endpoint[];
  creds: Credentials;
  rule: LagRule;
  weights: ReplicaWeights;
  log: (line: string) => void;
}): LagSource {
  const probe = new ReplayLagProbe(o.primary, o.replicas, o.creds);
  const rule = o.rule;
  const factorOf = (lagMs: number | null): number =>
    'weights' in rule ? lagWeight(lagMs, rule.weights) : maxLagFactor(lagMs, rule.maxLagMs);
  let busy = false;
  const tick = async (): Promise<void> => {
    if (busy) return;
    busy = true;
    try {
      const lag = await probe.sample();
      for (const [id, l] of Object.entries(lag)) {
        const f = factorOf(l.lagMs);
        // Two decimals: a lag that jitters by a millisecond does not re-key the router every second.
        if (!o.weights.setFactor(id, f > 0 ? Math.round(f * 100) / 100 : 0)) continue;
        o.log(
          `${id} weight ${o.weights.weightOf(id)} (replication lag ${l.lagMs === null ? '?' : Math.round(l.lagMs)} ms${f === 0 ? ': no new sessions' : ''})`,
        );
      }
    } finally {
      busy = false;
    }
  };
  const timer = setInterval(() => void tick(), SAMPLE_EVERY_MS);
  timer.unref();
  return {
    async stop() {
      clearInterval(timer);
      await probe.close();
    },
  };
}
