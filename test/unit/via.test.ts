import { mkdtempSync, rmSync, existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { executeBench } from '../../src/bench/execute.js';
import { type BenchFlagValues } from '../../src/bench/options/flags.js';
import {
  defaultViaLabel,
  identifyReplica,
  parseVia,
  parseViaLabel,
  ViaAdmissions,
  viaConnector,
  viaStrategy,
  viaTarget,
} from '../../src/bench/via.js';
import type { Connector, DbConnection } from '../../src/cluster/connector.js';
import type { Endpoint } from '../../src/core/endpoint.js';
import { DataSource } from '../../src/workload/data-source.js';
import { benchFlagValues } from '../helpers/fixtures.js';

const replicas: Endpoint[] = [1, 2, 3].map((i) => ({
  id: `r${i}`,
  kind: 'replica',
  host: '127.0.0.1',
  port: 33432 + i,
}));

describe('--via', () => {
  it('one endpoint for both classes, or one per class', () => {
    expect(parseVia('127.0.0.1:33500')).toEqual({
      premium: { host: '127.0.0.1', port: 33500 },
      freemium: { host: '127.0.0.1', port: 33500 },
    });
    expect(parseVia('freemium=127.0.0.1:6433, premium=localhost:6432')).toEqual({
      premium: { host: 'localhost', port: 6432 },
      freemium: { host: '127.0.0.1', port: 6433 },
    });
  });

  it.each([
    ['127.0.0.1', /expected host:port/],
    ['127.0.0.1:0', /expected host:port/],
    ['127.0.0.1:70000', /expected host:port/],
    ['premium=127.0.0.1:1', /no endpoint for freemium/],
    ['premium=a:1,premium=b:2', /premium is given twice/],
    ['gold=a:1,freemium=b:2', /expected premium=host:port,freemium=host:port/],
  ])('%s is refused, naming the flag', (text, message) => {
    expect(() => parseVia(text)).toThrow(message);
    expect(() => parseVia(text)).toThrow(/^--via: /);
  });

  it('labels: the endpoint by default, names safe in run ids', () => {
    expect(defaultViaLabel(parseVia('127.0.0.1:33500'))).toBe('127.0.0.1:33500');
    expect(defaultViaLabel(parseVia('premium=127.0.0.1:1,freemium=127.0.0.1:2'))).toBe(
      '127.0.0.1:1,127.0.0.1:2',
    );
    expect(viaStrategy(parseViaLabel('haproxy'))).toBe('via:haproxy');
    expect(() => parseViaLabel('ha proxy')).toThrow(/^--via-label: /);
    expect(() => parseViaLabel('')).toThrow(/^--via-label: /);
  });
});

describe('which replica a session landed on', () => {
  it('cluster_name plb-<id> first, the port when the name says nothing', () => {
    expect(identifyReplica({ name: 'plb-r2', port: 1 }, replicas)).toBe('r2');
    expect(identifyReplica({ name: '', port: 33435 }, replicas)).toBe('r3');
    expect(identifyReplica({ name: 'plb-primary', port: 33432 }, replicas)).toBeUndefined();
    expect(identifyReplica({ name: 'other', port: 5432 }, replicas)).toBeUndefined();
  });
});

describe('ViaAdmissions', () => {
  it('admits to the class endpoint and counts a session where it landed, until released', () => {
    const a = new ViaAdmissions(['r1', 'r2']);
    expect(a.admit('premium')).toEqual({ replica: 'via:premium' });
    a.landed('via:premium', 'r2', 'premium');
    a.landed('via:freemium', 'r2', 'freemium');
    a.landed('via:freemium', 'r9', 'freemium'); // not a replica: not counted
    a.markDown('r1');
    expect(a.snapshot()).toEqual([
      { id: 'r1', healthy: false, role: 'mixed', sessions: { premium: 0, freemium: 0 } },
      { id: 'r2', healthy: true, role: 'mixed', sessions: { premium: 1, freemium: 1 } },
    ]);
    a.release('r2', 'premium');
    a.release('r2', 'premium'); // never negative
    a.release('via:premium', 'premium'); // a session that never landed
    a.markUp('r1');
    expect(a.snapshot().map((r) => [r.id, r.healthy, r.sessions.premium])).toEqual([
      ['r1', true, 0],
      ['r2', true, 0],
    ]);
  });
});

/** A connector whose via connections land on `r3`; replica ids open as they are asked. */
function fakeConnector(opened: string[]): Connector {
  return {
    open: async (server) => {
      opened.push(server);
      const conn: DbConnection = {
        query: async () => 1,
        end: async () => undefined,
        ...(server.startsWith('via:') ? { landedOn: 'r3' } : {}),
      };
      return conn;
    },
  };
}

describe('DataSource through a balancer', () => {
  it('the session is pinned to, counted on and released from the replica it landed on', async () => {
    const opened: string[] = [];
    const router = new ViaAdmissions(['r1', 'r2', 'r3']);
    const ds = new DataSource({
      router,
      connector: fakeConnector(opened),
      connectTimeoutMs: 1000,
      queryTimeoutMs: 1000,
      now: () => 0,
    });
    const conn = await ds.getConnection({ class: 'freemium' });
    expect(opened).toEqual([viaTarget('freemium')]);
    expect(conn.replica).toBe('r3');
    expect(router.snapshot()[2]?.sessions).toEqual({ premium: 0, freemium: 1 });
    await conn.close();
    expect(router.snapshot()[2]?.sessions).toEqual({ premium: 0, freemium: 0 });
  });

  it('viaConnector sends replica ids (health checks) to the cluster, not the balancer', async () => {
    const opened: string[] = [];
    const c = viaConnector(
      fakeConnector(opened),
      { label: 'x', endpoints: parseVia('127.0.0.1:1') },
      { user: 'u', password: 'p', database: 'd' },
      replicas,
    );
    await c.open('r1', { connectTimeoutMs: 10, applicationName: 'plb-health', onError: () => undefined });
    expect(opened).toEqual(['r1']);
  });
});

describe('bench flags of via', () => {
  const work = mkdtempSync(join(tmpdir(), 'plb-via-cli-'));
  afterAll(() => rmSync(work, { recursive: true, force: true }));

  async function run(over: Partial<BenchFlagValues>): Promise<{ code: number; errors: string[] }> {
    const errors: string[] = [];
    const prev = process.env.PLB_STATE_DIR;
    process.env.PLB_STATE_DIR = join(work, 'state');
    try {
      const code = await executeBench(benchFlagValues(join(work, 'runs'), 'plbtest-via-cli', 61532, over), {
        log: () => undefined,
        warn: (l) => errors.push(l),
      });
      return { code, errors };
    } finally {
      if (prev === undefined) delete process.env.PLB_STATE_DIR;
      else process.env.PLB_STATE_DIR = prev;
    }
  }

  it.each([
    [{ strategies: 'plb,via' }, /^Error: --strategy via: needs --via host:port/],
    [{ strategies: 'plb', via: '127.0.0.1:33500' }, /^Error: --via: only with --strategy via/],
    [{ strategies: 'via', via: 'nowhere' }, /^Error: --via: expected host:port/],
    [{ strategies: 'via', via: '127.0.0.1:1', 'via-label': 'a b' }, /^Error: --via-label: /],
    [
      { strategies: 'via', via: '127.0.0.1:1', driver: 'sim' },
      /^Error: --strategy via: needs a real cluster/,
    ],
  ])('%o: one-line error, exit 1, nothing started', async (over, message) => {
    const { code, errors } = await run(over);
    expect(code).toBe(1);
    expect(errors).toHaveLength(1);
    expect(errors[0]).toMatch(message);
    expect(existsSync(join(work, 'runs'))).toBe(false);
  });
});
