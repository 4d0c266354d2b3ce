// The network faults' accuracy on a real cluster (local driver, loopback, in the kernel): the round
// trip a delay adds (each way: a round trip grows by 2 x ms), p50 and p95 over N queries, with and
// without jitter; the rate a bandwidth limit lets through (a large result's bytes over its time);
// how soon a replica cut from its primary (partition, link replication) shows lag, and how soon it
// catches up after the heal. Needs root, iptables, tc and the delayer (npm run build). Prints
// figures; asserts nothing. Brings its own cluster up and down (ports 23590-23591).
//
//   node --import tsx benchmarks/net-faults.ts [--round-trips 200] [--rounds 3] [--driver local|docker]
//     [--only delay,bandwidth,replication]
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import type pg from 'pg';
import { connect } from '../src/cluster/pg-util.js';
import type { ClusterDriver } from '../src/cluster/driver.js';
import { bringUp, clusterSpec, downCluster, parseDriverChoice } from '../src/cluster/select.js';

const { values } = parseArgs({
  options: {
    'round-trips': { type: 'string', default: '200' },
    rounds: { type: 'string', default: '3' },
    driver: { type: 'string', default: 'local' },
    only: { type: 'string', default: 'delay,bandwidth,replication' },
  },
});
const N = Number(values['round-trips']);
const ROUNDS = Number(values.rounds);
const ONLY = new Set(values.only.split(','));
const A = { cpus: 0.25 };
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

const q = (xs: number[], p: number) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor(p * s.length))] as number;
};

const stateDir = mkdtempSync(join(tmpdir(), 'plb-net-bench-'));
const spec = clusterSpec({ name: 'plbbench-net', replicas: 1, basePort: 23590, stateDir });
let driver: ClusterDriver;

async function roundTrips(c: pg.Client, n: number): Promise<number[]> {
  const out: number[] = [];
  for (let i = 0; i < n; i++) {
    const t = performance.now();
    await c.query('select 1');
    out.push(performance.now() - t);
  }
  return out;
}

async function delay(c: pg.Client): Promise<void> {
  const base = await roundTrips(c, N);
  const b50 = q(base, 0.5);
  console.log(
    `\ndelay: round trip of select 1 on r1, ${N} each (no fault: p50 ${b50.toFixed(2)} ms, p95 ${q(base, 0.95).toFixed(2)} ms)`,
  );
  console.log('  ms  jitter  expected+  added p50  added p95   min+    max+');
  for (const [ms, jitter] of [
    [50, 0],
    [50, 20],
    [200, 0],
    [200, 20],
  ] as const) {
    await driver.faults.delay('r1', { ...A, ms, ...(jitter > 0 ? { jitter } : {}) });
    const t = (await roundTrips(c, N)).map((x) => x - b50);
    await driver.faults.heal('r1', A);
    const f = (x: number) => x.toFixed(1).padStart(9);
    console.log(
      `${String(ms).padStart(4)}  ${String(jitter).padStart(6)}  ${String(2 * ms).padStart(9)}${f(q(t, 0.5))}  ${f(q(t, 0.95))}${f(Math.min(...t))}${f(Math.max(...t))}`,
    );
  }
}

async function bandwidth(c: pg.Client): Promise<void> {
  console.log(`\nbandwidth: a large result from r1 (select repeat('x', bytes)), ${ROUNDS} rounds`);
  console.log('      rate     bytes   expected s   measured s (each)        rate measured / set');
  for (const [rate, bytes] of [
    [1e6, 500_000],
    [1e7, 5_000_000],
  ] as const) {
    await driver.faults.bandwidth('r1', { ...A, rate });
    const secs: number[] = [];
    for (let i = 0; i < ROUNDS; i++) {
      const t = performance.now();
      await c.query(`select repeat('x', ${bytes}) as x`);
      secs.push((performance.now() - t) / 1000);
    }
    await driver.faults.heal('r1', A);
    const ratios = secs.map((s) => (bytes * 8) / s / rate);
    console.log(
      `${`${rate / 1e6}mbit`.padStart(10)}${String(bytes).padStart(10)}${((bytes * 8) / rate).toFixed(2).padStart(13)}   ${secs
        .map((s) => s.toFixed(2))
        .join(', ')
        .padEnd(22)} ${ratios.map((r) => r.toFixed(3)).join(', ')}`,
    );
  }
}

async function replication(primary: pg.Client, r1: pg.Client): Promise<void> {
  console.log(`\npartition (link replication) of r1, the primary inserting every 20 ms, ${ROUNDS} rounds`);
  console.log(
    '  lag seen ms  last receive ms  lag bytes 1 s    5 s  primary view 5 s  r1 replay lag 5 s  r1 answers  caught up ms',
  );
  await primary.query('create table if not exists net_bench (x int)');
  let writing = true;
  const writer = (async () => {
    while (writing) {
      await primary.query('insert into net_bench select generate_series(1, 100)');
      await sleep(20);
    }
  })();
  const receiveLsn = async () =>
    ((await r1.query('select pg_last_wal_receive_lsn()::text as l')).rows[0] as { l: string }).l;
  const currentLsn = async () =>
    ((await primary.query('select pg_current_wal_lsn()::text as l')).rows[0] as { l: string }).l;
  const lag = async (a: string, b: string) =>
    Number(
      ((await primary.query('select pg_wal_lsn_diff($1, $2)::bigint as d', [a, b])).rows[0] as { d: string })
        .d,
    );
  try {
    for (let round = 0; round < ROUNDS; round++) {
      await sleep(500);
      await driver.faults['partition-replication']('r1', A);
      const t0 = performance.now();
      let last = await receiveLsn();
      let lastChange = 0;
      let lagSeen = -1;
      const lagAt: number[] = [];
      while (performance.now() - t0 < 5000) {
        const l = await receiveLsn();
        if (l !== last) {
          last = l;
          lastChange = performance.now() - t0;
        }
        const el = performance.now() - t0;
        if (lagSeen < 0 && (await lag(await currentLsn(), l)) > 0) lagSeen = el;
        if (lagAt.length === 0 && el >= 1000) lagAt.push(await lag(await currentLsn(), l));
        await sleep(10);
      }
      lagAt.push(await lag(await currentLsn(), await receiveLsn()));
      // What the primary sees (sent, not replayed) and the replica's own replay lag.
      const primaryView = Number(
        (
          (
            await primary.query(
              "select pg_wal_lsn_diff(sent_lsn, replay_lsn)::bigint as d from pg_stat_replication where application_name = 'plb-r1'",
            )
          ).rows[0] as { d: string } | undefined
        )?.d ?? NaN,
      );
      const replayLag = (
        (await r1.query('select extract(epoch from now() - pg_last_xact_replay_timestamp())::float8 as s'))
          .rows[0] as { s: number }
      ).s;
      const answers =
        ((await r1.query('select count(*)::int as n from net_bench')).rows[0] as { n: number }).n > 0;
      const atHeal = await currentLsn();
      await driver.faults.heal('r1', A);
      const t1 = performance.now();
      while ((await lag(await receiveLsn(), atHeal)) < 0 && performance.now() - t1 < 120_000) await sleep(10);
      const cells = [
        [lagSeen.toFixed(0), 13],
        [lastChange.toFixed(0), 17],
        [String(lagAt[0]), 15],
        [String(lagAt[1]), 9],
        [String(primaryView), 18],
        [`${replayLag.toFixed(2)} s`, 19],
        [String(answers), 12],
        [(performance.now() - t1).toFixed(0), 13],
      ] as const;
      console.log(cells.map(([v, w]) => v.padStart(w)).join(''));
    }
  } finally {
    writing = false;
    await writer.catch(() => undefined);
  }
}

try {
  ({ driver } = await bringUp({
    driver: parseDriverChoice(values.driver),
    spec,
    log: (l) => console.error(l),
  }));
  const creds = await driver.credentials();
  const ep = (id: string) => driver.endpoints().find((e) => e.id === id)!;
  const r1 = await connect(ep('r1'), creds, { queryTimeoutMs: 120_000 });
  const primary = await connect(ep('primary'), creds);
  try {
    console.log(`network faults on the ${driver.kind} driver, ${new Date().toISOString()}`);
    if (ONLY.has('delay')) await delay(r1);
    if (ONLY.has('bandwidth')) await bandwidth(r1);
    if (ONLY.has('replication')) await replication(primary, r1);
  } finally {
    await r1.end();
    await primary.end();
  }
} finally {
  await downCluster(spec.name, stateDir, { explicit: true });
  rmSync(stateDir, { recursive: true, force: true });
}
