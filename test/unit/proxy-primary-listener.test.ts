/**
 * The primary listener over fake servers (fake-replicas.ts) whose answers to the recovery query
 * the test sets: sessions go to the server not in recovery; when another takes writes, a session
 * left on the old one (still reachable) ends and new ones go to the new one; with two writable,
 * new sessions are refused 57P03 naming the split brain while open ones stay; and admission under
 * the primary's limit: freemium kept from the premium reserve, waiting premium admitted first.
 */
import pg from 'pg';
import { afterEach, describe, expect, it } from 'vitest';
import type { Connector } from '../../src/cluster/connector.js';
import type { Endpoint } from '../../src/core/endpoint.js';
import type { AdmissionSettings } from '../../src/proxy/admission/replica-limits.js';
import {
  startPrimaryListener,
  type PrimaryListenerHandle,
} from '../../src/proxy/primary/primary-listener.js';
import { fake, type Fake } from '../helpers/fake-replicas.js';

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** Waits for cond, checking every 20 ms, at most ~10 s (a bound, not a timing assertion). */
async function until(cond: () => boolean): Promise<void> {
  for (let i = 0; i < 500 && !cond(); i++) await sleep(20);
  expect(cond()).toBe(true);
}

interface Rig {
  listener: PrimaryListenerHandle;
  fakes: { primary: Fake; r1: Fake };
  state: Record<string, 'writable' | 'recovery'>;
  clients: pg.Client[];
  logs: string[];
  /** What the clients were told outside a query (a session ended by the proxy). */
  errors: string[];
}
let rig: Rig | undefined;

afterEach(async () => {
  if (!rig) return;
  for (const c of rig.clients) await c.end().catch(() => undefined);
  await rig.listener.stop(100);
  for (const f of Object.values(rig.fakes)) {
    for (const s of f.sockets) s.destroy();
    await new Promise<void>((r) => f.server.close(() => r()));
  }
  rig = undefined;
});

async function setup(base: number, admission?: AdmissionSettings): Promise<Rig> {
  const state: Rig['state'] = { primary: 'writable', r1: 'recovery' };
  const fakes = { primary: await fake('good', base + 2), r1: await fake('good', base + 3) };
  // The checks' connections: the recovery query answered as `state` says.
  const probes: Connector = {
    open: (id) =>
      Promise.resolve({
        query: () => Promise.resolve(state[id] === 'writable' ? 1 : 0),
        end: () => Promise.resolve(),
      }),
  };
  const servers: Endpoint[] = [
    { id: 'primary', kind: 'primary', host: '127.0.0.1', port: fakes.primary.port },
    { id: 'r1', kind: 'replica', host: '127.0.0.1', port: fakes.r1.port },
  ];
  const logs: string[] = [];
  const listener = await startPrimaryListener({
    servers,
    primary: 'primary',
    connector: probes,
    host: '127.0.0.1',
    ports: { premium: base, freemium: base + 1 },
    classFrom: 'off',
    health: { intervalMs: 30, timeoutMs: 1000, fall: 2, rise: 1, hangMs: 5000 },
    ...(admission ? { admission } : {}),
    statsEveryS: 0,
    log: (l) => logs.push(l),
  });
  rig = { listener, fakes, state, clients: [], logs, errors: [] };
  return rig;
}

function client(r: Rig, port: number): pg.Client {
  const c = new pg.Client({
    host: '127.0.0.1',
    port,
    user: 'u',
    database: 'd',
    connectionTimeoutMillis: 5000,
  });
  c.on('error', (e) => r.errors.push(e.message));
  r.clients.push(c);
  return c;
}

describe('the primary listener', () => {
  it('follows the server not in recovery; the old one’s sessions end; split brain refuses new ones', async () => {
    const r = await setup(17460);
    const onOld = client(r, 17460);
    await onOld.connect();
    await onOld.query('select 1');
    expect(r.fakes.primary.accepted).toBe(1);
    // A switchover: r1 promoted, the old primary (still reachable) in recovery.
    r.state.primary = 'recovery';
    r.state.r1 = 'writable';
    await until(() => r.listener.follower.primary() === 'r1');
    // Told why (08006), whether that reached the client between queries or in answer to one.
    await onOld.query('select 1').catch((e: Error) => r.errors.push(e.message));
    expect(r.errors.join(' | ')).toMatch(/r1 is the primary now/);
    const onNew = client(r, 17461);
    await onNew.connect();
    await onNew.query('select 1');
    expect(r.fakes.r1.accepted).toBe(1);
    // Split brain: the old one writable again beside r1.
    r.state.primary = 'writable';
    await until(() => r.listener.follower.current.kind === 'split-brain');
    const refused = client(r, 17460);
    const err = (await refused.connect().then(
      () => undefined,
      (e: unknown) => e,
    )) as { code?: string; message?: string };
    expect(err.code).toBe('57P03');
    expect(err.message).toMatch(/no primary: primary, r1 accept writes \(split brain\)/);
    // The session already open stays.
    await onNew.query('select 1');
    expect(r.logs.some((l) => /split brain/.test(l))).toBe(true);
    // One remains (the old one a standby again): r1 takes new sessions.
    r.state.primary = 'recovery';
    await until(() => r.listener.follower.primary() === 'r1');
    const again = client(r, 17460);
    await again.connect();
    expect(r.fakes.r1.accepted).toBe(2);
  }, 30_000);

  it("admits under the primary's limit: freemium kept from the premium reserve, premium first", async () => {
    const r = await setup(17466, { limit: 2, queue: 10, timeoutMs: 20_000, premiumReserve: 0.5 });
    const connected = (c: pg.Client): { done: boolean; p: Promise<void> } => {
      const s = { done: false, p: Promise.resolve() };
      s.p = c.connect().then(() => void (s.done = true));
      return s;
    };
    const f1 = client(r, 17467);
    await f1.connect();
    // Freemium may hold 2 - ceil(0.5 x 2) = 1: the second waits, premium takes the reserve.
    const f2 = connected(client(r, 17467));
    const p1 = client(r, 17466);
    await p1.connect();
    await until(() => r.listener.gate.queued('freemium') === 1);
    const p2 = connected(client(r, 17466));
    await until(() => r.listener.gate.queued('premium') === 1);
    // A slot freed: the premium session that came later gets it; freemium still waits.
    await f1.end();
    await p2.p;
    expect(f2.done).toBe(false);
    expect(r.listener.gate.queued('freemium')).toBe(1);
    await p1.end();
    await (r.clients[3] as pg.Client).end();
    await f2.p;
    expect(r.listener.limits()).toEqual({ primary: 2, r1: 2 });
  }, 30_000);
});
