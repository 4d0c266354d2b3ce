// One client try of the burst matrix (burst-matrix.ts): psql through the proxy, and with
// --direct psql straight to the replica in the same tick, with what the proxy counted while it
// ran (its admin view before and after), and the table each row prints.
import { execFile } from 'node:child_process';
import { join } from 'node:path';
import type { Credentials } from '../../src/core/endpoint.js';

/** A try with no exit by then is hung (the flood's sockets too). */
export const HUNG_MS = 15_000;

export type Cls = 'premium' | 'freemium';

export interface Try {
  ms: number;
  outcome: 'served' | 'refused' | 'hung';
  reason?: string;
  /** What the proxy counted while the try ran (its admin view before and after). */
  during?: Context;
  /** --direct: the same instant's psql straight to the replica, ms. */
  pair?: number;
}

/** The proxy's counters around a try: what a slow one coincided with. */
interface Context {
  /** Flood sessions cut at --startup-timeout (a wave the flood reopens: the postmaster forks again). */
  timeouts: number;
  /** Sessions cut for another client host (--startup-yield). */
  yields: number;
  /** Sessions of the client's class waiting for a slot when the try began. */
  waiting: number;
  /** The replicas' roles as the try began and ended (a borrowed one: role>borrower). */
  roles: string;
}

interface Counters {
  timeouts: number;
  yields: number;
  waiting: Record<Cls, number>;
  roles: string;
}

/** The proxy's counters from its admin view (GET /admin on --metrics-port); undefined if it did not answer. */
async function counters(port: number): Promise<Counters | undefined> {
  try {
    const res = await fetch(`http://127.0.0.1:${port}/admin?clients=0`, {
      signal: AbortSignal.timeout(2000),
    });
    const v = (await res.json()) as {
      pools: { class: Cls; waiting: number }[];
      replicas: { id: string; role: string; borrowedBy?: string }[];
      counters: { startupTimeouts: number; startupYields: number };
    };
    const waiting = { premium: 0, freemium: 0 };
    for (const p of v.pools) waiting[p.class] = p.waiting;
    const roles = v.replicas
      .map((r) => `${r.id} ${r.role}${r.borrowedBy ? `>${r.borrowedBy}` : ''}`)
      .join(', ');
    return { timeouts: v.counters.startupTimeouts, yields: v.counters.startupYields, waiting, roles };
  } catch {
    return undefined;
  }
}

/**
 * A try through the proxy, with what the proxy counted while it ran; with `direct`, psql straight
 * to the replica is spawned in the same tick (the counters are read before both and after both).
 */
export async function tracedTry(
  bin: string,
  creds: Credentials,
  port: number,
  cls: Cls,
  metricsPort: number,
  direct?: number,
): Promise<{ through: Try; straight?: Try }> {
  const before = await counters(metricsPort);
  const [t, straight] = await Promise.all([
    psqlTry(bin, creds, port),
    direct === undefined ? undefined : psqlTry(bin, creds, direct),
  ]);
  const after = await counters(metricsPort);
  const through: Try = straight ? { ...t, pair: straight.ms } : t;
  if (before && after)
    through.during = {
      timeouts: after.timeouts - before.timeouts,
      yields: after.yields - before.yields,
      waiting: before.waiting[cls],
      roles: before.roles === after.roles ? before.roles : `${before.roles} -> ${after.roles}`,
    };
  return straight ? { through, straight } : { through };
}

/** One client: psql -c 'select 1' through the proxy, timed from spawn to exit. */
function psqlTry(bin: string, creds: Credentials, port: number): Promise<Try> {
  const target = `host=127.0.0.1 port=${port} user=${creds.user} dbname=${creds.database}`;
  const env = { ...process.env, PGPASSWORD: creds.password, PGCONNECT_TIMEOUT: '15' };
  const t0 = performance.now();
  return new Promise((resolve) =>
    execFile(
      join(bin, 'psql'),
      [target, '-XAtc', 'select 1'],
      { env, encoding: 'utf8', timeout: HUNG_MS },
      (err, _out, errOut) => {
        const ms = performance.now() - t0;
        if (!err) return resolve({ ms, outcome: 'served' });
        if (err.killed) return resolve({ ms, outcome: 'hung' });
        resolve({ ms, outcome: 'refused', reason: errOut.trim().split('\n')[0] });
      },
    ),
  );
}

const pct = (xs: number[], p: number): number => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length === 0 ? NaN : (s[Math.min(s.length - 1, Math.ceil((p / 100) * s.length) - 1)] as number);
};

/** --direct: of the slow tries, how many had their direct pair slow too (the host's stall, not the proxy's). */
function pairLine(tries: Try[]): string[] {
  const slow = tries.filter((t) => t.ms > 1000 && t.pair !== undefined);
  if (slow.length === 0) return [];
  const both = slow.filter((t) => (t.pair as number) > 1000).length;
  return [`    slow tries whose direct pair took over 1 s too: ${both} of ${slow.length}`];
}

export function table(cls: string, tries: Try[]): string[] {
  const served = tries.filter((t) => t.outcome === 'served');
  const ms = served.map((t) => t.ms);
  const f = (x: number): string => (Number.isNaN(x) ? '-' : x.toFixed(0));
  const reasons = [...new Set(tries.filter((t) => t.reason).map((t) => t.reason))];
  return [
    `  ${cls} client: tries ${tries.length}, served ${served.length} (within 1 s: ${ms.filter((m) => m <= 1000).length}), ` +
      `refused ${tries.filter((t) => t.outcome === 'refused').length}, hung ${tries.filter((t) => t.outcome === 'hung').length}; ` +
      `ms p50 ${f(pct(ms, 50))} p95 ${f(pct(ms, 95))} max ${f(ms.length ? Math.max(...ms) : NaN)}`,
    `    per try, ms: ${tries.map((t) => `${f(t.ms)}${t.outcome === 'served' ? '' : `(${t.outcome})`}`).join(' ')}`,
    ...reasons.map((r) => `    refused: ${r}`),
    ...pairLine(tries),
    // A slow try beside what the proxy did meanwhile: a wave of startup timeouts is the flood
    // reopening its sockets (the replica forks them all), a yield is this proxy cutting for it.
    ...tries.flatMap((t, k) =>
      t.ms > 1000 && t.during
        ? [
            `    slow try ${k + 1}: ${f(t.ms)} ms; meanwhile startup timeouts +${t.during.timeouts}, ` +
              `yields +${t.during.yields}; ${t.during.waiting} of its class waiting as it began; roles ${t.during.roles}` +
              (t.pair === undefined ? '' : `; direct at the same instant ${f(t.pair)} ms`),
          ]
        : [],
    ),
  ];
}
