// The sessions a load calibration drives one replica with: a pool, so a paced arrival never
// queues behind one busy connection, and the paced arrivals themselves.
import { setTimeout as sleep } from 'node:timers/promises';
import type pg from 'pg';
import { connect } from '../cluster/pg-util.js';
import type { Credentials, Endpoint } from '../core/endpoint.js';
import type { Rng } from '../core/rng.js';

export interface SessionPool {
  /** Back-to-back queries on every session until `until` (Date.now() ms); how many ran. */
  flood(until: number): Promise<number>;
  /** Queries arriving at `rate` a second (Poisson) for `forMs`; resolves when all have ended. */
  paced(rate: number, forMs: number, rng: Rng): Promise<number>;
  close(): Promise<void>;
}

export async function openPool(
  replica: Endpoint,
  credentials: Credentials,
  size: number,
  next: () => { text: string; values: unknown[] },
): Promise<SessionPool> {
  const clients = await Promise.all(
    Array.from({ length: size }, () => connect(replica, credentials, { applicationName: 'plb-calibrate' })),
  );
  const free = [...clients];
  const waiting: ((c: pg.Client) => void)[] = [];
  const acquire = (): Promise<pg.Client> => {
    const c = free.pop();
    return c ? Promise.resolve(c) : new Promise((resolve) => waiting.push(resolve));
  };
  const release = (c: pg.Client): void => {
    const w = waiting.shift();
    if (w) w(c);
    else free.push(c);
  };
  const one = async (): Promise<void> => {
    const c = await acquire();
    try {
      const q = next();
      await c.query(q.text, q.values);
    } finally {
      release(c);
    }
  };
  return {
    async flood(until) {
      let n = 0;
      await Promise.all(
        clients.map(async () => {
          while (Date.now() < until) {
            await one();
            n++;
          }
        }),
      );
      return n;
    },
    async paced(rate, forMs, rng) {
      const inFlight: Promise<void>[] = [];
      let n = 0;
      const start = Date.now();
      for (let at = 0; at < forMs; at += rng.exp(1000 / rate)) {
        const wait = start + at - Date.now();
        if (wait > 0) await sleep(wait);
        inFlight.push(one().then(() => void n++));
      }
      await Promise.all(inFlight);
      return n;
    },
    async close() {
      await Promise.all(clients.map((c) => c.end().catch(() => undefined)));
    },
  };
}
