// `plb proxy --metrics-port`: what the proxy knows (sessions, not queries) as Prometheus text,
// read from the router and the counters at each scrape, on a registry of its own.
import { Gauge, Registry } from 'prom-client';
import { computeSignals } from '../metrics/signals.js';
import { type ReplicaSnapshot } from '../router/types.js';
import { SERVICE_CLASSES } from '../core/service-class.js';
import type { ProxyStats } from './stats.js';

export interface ProxyView {
  snapshot(): readonly ReplicaSnapshot[];
  readonly stats: ProxyStats;
}

/**
 * The registry of a proxy; `view()` is undefined until the proxy listens (then nothing is set).
 * Signals: the spread of open sessions over the healthy replicas and the realised/configured
 * weight of open sessions (the proxy sees no queries or CPU, so no query/CPU spread, no silence).
 */
export function proxyRegistry(view: () => ProxyView | undefined): Registry {
  const registry = new Registry();
  const registers = [registry];
  const gauge = (name: string, help: string, labelNames: string[], fill: (g: Gauge, v: ProxyView) => void) =>
    new Gauge({
      name,
      help,
      labelNames,
      registers,
      collect() {
        this.reset();
        const v = view();
        if (v) fill(this, v);
      },
    });
  gauge('plb_replica_sessions', 'Open sessions per replica and class', ['replica', 'class'], (g, v) => {
    for (const r of v.snapshot())
      for (const cls of SERVICE_CLASSES) g.set({ replica: r.id, class: cls }, r.sessions[cls]);
  });
  gauge('plb_replica_healthy', '1 when the router has the replica healthy', ['replica'], (g, v) => {
    for (const r of v.snapshot()) g.set({ replica: r.id }, r.healthy ? 1 : 0);
  });
  gauge('plb_replica_weight', 'Configured weight of the replica', ['replica'], (g, v) => {
    for (const r of v.snapshot()) g.set({ replica: r.id }, r.weight);
  });
  gauge(
    'plb_replica_sessions_counted',
    'Sessions opened, lost or failed on the replica since the start',
    ['replica', 'what'],
    (g, v) => {
      for (const r of v.snapshot()) {
        const c = v.stats.replica(r.id);
        for (const what of ['opened', 'lost', 'failed'] as const) g.set({ replica: r.id, what }, c[what]);
      }
    },
  );
  gauge(
    'plb_class_sessions_counted',
    'Sessions per class since the start, by outcome',
    ['class', 'what'],
    (g, v) => {
      for (const cls of SERVICE_CLASSES)
        for (const [what, n] of Object.entries(v.stats.classes[cls])) g.set({ class: cls, what }, n);
    },
  );
  const signals = (v: ProxyView) =>
    computeSignals(
      v.snapshot().map((r) => ({
        id: r.id,
        up: r.healthy,
        queries: r.sessions.premium + r.sessions.freemium,
        sessionsOpened: r.sessions.premium + r.sessions.freemium,
        cpu: null,
        weight: r.weight,
        longestQuietS: 0,
      })),
      0,
    );
  gauge(
    'plb_signal_session_share_spread',
    'Open sessions: max/mean over the healthy replicas',
    [],
    (g, v) => {
      const s = signals(v).queryShareSpread;
      if (s !== null) g.set(s);
    },
  );
  gauge(
    'plb_signal_weight_deviation',
    'Worst |share of open sessions / share of weight - 1| over the healthy replicas',
    [],
    (g, v) => {
      const s = signals(v).weightDeviation;
      if (s !== null) g.set(s);
    },
  );
  return registry;
}
