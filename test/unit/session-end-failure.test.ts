/**
 * A session's end is not a replica's failure (issue 50, item 6): which failures say only that one
 * session ended (endsOnlyASession), and the health checker counting them only through the probe
 * each asks for, against a fake server that is alive or gone.
 */
import pg from 'pg';
import { describe, expect, it } from 'vitest';
import {
  HealthChecker,
  type FailureReport,
  type HealthState,
  type HealthVia,
} from '../../src/cluster/health.js';
import type { Connector, DbConnection } from '../../src/cluster/connector.js';
import { cannotConnectNow, endsOnlyASession, type FailureVia } from '../../src/core/failure-cause.js';
import { PlbError } from '../../src/core/errors.js';

function dbError(code: string, message = 'server says no'): pg.DatabaseError {
  const e = new pg.DatabaseError(message, 0, 'error');
  e.code = code;
  e.severity = 'FATAL';
  return e;
}

const sysError = (code: string): Error => Object.assign(new Error(`read ${code}`), { code });
const terminated = dbError('57P01', 'terminating connection due to administrator command');

describe('cannotConnectNow', () => {
  it('is 57P03, wrapped or not, and nothing else', () => {
    expect(cannotConnectNow(dbError('57P03'))).toBe(true);
    expect(cannotConnectNow(new PlbError('CONNECT_FAILED', 'x', { cause: dbError('57P03') }))).toBe(true);
    expect(cannotConnectNow(dbError('53300'))).toBe(false);
    expect(cannotConnectNow(sysError('ECONNREFUSED'))).toBe(false);
  });
});

describe('endsOnlyASession', () => {
  it.each([
    ['57P01 on a session (pg_terminate_backend, or a fast shutdown)', terminated, 'session', true],
    ['57P01 as the first answer of a connect', terminated, 'connect', true],
    ['57P02 on a session', dbError('57P02'), 'session', true],
    ['08006 from the server on a session', dbError('08006'), 'session', true],
    ['a connection closed under a session', new Error('Connection terminated unexpectedly'), 'session', true],
    ['ECONNRESET under a session', sysError('ECONNRESET'), 'session', true],
    [
      '57P01 wrapped by PlbError',
      new PlbError('SESSION_FAILED', 'query failed', { cause: terminated }),
      'session',
      true,
    ],
    ['ECONNREFUSED on connect: proof', sysError('ECONNREFUSED'), 'connect', false],
    ['ECONNRESET on connect: proof', sysError('ECONNRESET'), 'connect', false],
    [
      'ECONNABORTED under a session (hang timeout ran out): proof',
      sysError('ECONNABORTED'),
      'session',
      false,
    ],
    ['25P03 idle-in-transaction timeout: not unreachable at all', dbError('25P03'), 'session', false],
    ['57014 statement timeout: slow, never death evidence', dbError('57014'), 'session', false],
    ['57P05 idle session timeout', dbError('57P05'), 'session', false],
    ["the checker's own probe", terminated, 'health', false],
  ] as const)('%s', (_name, err, via, expected) => {
    expect(endsOnlyASession(err, via as FailureVia)).toBe(expected);
  });
});

type ServerState = 'alive' | 'gone' | 'shutting-down';
const shuttingDown = dbError('57P03', 'the database system is shutting down');

/**
 * A fake server: alive answers every query; gone fails kept connections and refuses new ones;
 * shutting down fails kept connections and answers new ones 57P03.
 */
function fakeServer(initial: ServerState = 'alive'): {
  connector: Connector;
  kill(state?: ServerState): void;
  queries: () => number;
  opens: () => number;
} {
  let state = initial;
  let queries = 0;
  let opens = 0;
  const conn = (): DbConnection => ({
    query: () => {
      queries += 1;
      return state === 'alive'
        ? Promise.resolve(1)
        : Promise.reject(new Error('Connection terminated unexpectedly'));
    },
    end: () => Promise.resolve(),
  });
  return {
    connector: {
      open: () => {
        opens += 1;
        if (state === 'alive') return Promise.resolve(conn());
        return Promise.reject(state === 'gone' ? sysError('ECONNREFUSED') : shuttingDown);
      },
    },
    kill: (to: ServerState = 'gone') => void (state = to),
    queries: () => queries,
    opens: () => opens,
  };
}

interface Watched {
  checker: HealthChecker;
  changes: { state: HealthState; via: HealthVia; cause: string }[];
  failures: FailureReport[];
}

function watch(connector: Connector, fall: number): Watched {
  const w: Watched = { checker: undefined as unknown as HealthChecker, changes: [], failures: [] };
  // Checks far apart: every probe in a test is one a report asked for (or the first, at start).
  w.checker = new HealthChecker(
    ['r1'],
    connector,
    { intervalMs: 60_000, timeoutMs: 60_000, fall, rise: 2, hangMs: 60_000 },
    (_r, state, via, cause) => w.changes.push({ state, via, cause }),
    (f) => w.failures.push(f),
  );
  w.checker.start();
  return w;
}

const turn = (): Promise<void> => new Promise((r) => setTimeout(r, 0));

/** Until cond holds (the fake's promises settle in a few loop turns), at most 2 s; then their callbacks' turn. */
async function until(cond: () => boolean): Promise<void> {
  for (let i = 0; i < 200 && !cond(); i++) await new Promise((r) => setTimeout(r, 10));
  await turn();
}

describe('the health checker and a session end', () => {
  it('a live server: sessions ended by pg_terminate_backend never mark it down, whatever the fall', async () => {
    const server = fakeServer();
    const w = watch(server.connector, 1);
    await until(() => server.queries() >= 1);
    for (let i = 0; i < 5; i++) expect(w.checker.reportFailure('r1', terminated, 'session')).toBe('other');
    // Reported while the first probe was in flight or after: each is followed by a probe sent after it.
    await until(() => server.queries() >= 2);
    await new Promise((r) => setTimeout(r, 50));
    expect(w.changes).toEqual([]);
    expect(w.checker.isHealthy('r1')).toBe(true);
    expect(w.failures.map((f) => f.cause)).toEqual(Array(5).fill('other'));
    expect(w.failures.every((f) => f.via === 'session')).toBe(true);
    w.checker.stop();
  });

  it("a probe whose kept connection was terminated alone connects anew: the server's answer counts", async () => {
    let killKept = false;
    let opens = 0;
    const connector: Connector = {
      open: () => {
        opens += 1;
        const mine = opens;
        return Promise.resolve({
          query: () => (killKept && mine === 1 ? Promise.reject(terminated) : Promise.resolve(1)),
          end: () => Promise.resolve(),
        });
      },
    };
    const w = watch(connector, 1);
    await until(() => opens >= 1);
    killKept = true; // pg_terminate_backend of every backend, the checker's own too
    w.checker.reportFailure('r1', terminated, 'session');
    await until(() => opens >= 2);
    await new Promise((r) => setTimeout(r, 50));
    expect(opens).toBe(2);
    expect(w.changes).toEqual([]);
    expect(w.failures.filter((f) => f.via === 'health')).toEqual([]);
    w.checker.stop();
  });

  it('a gone server: the probes the sessions ask for confirm it, and it is marked down by the checker', async () => {
    const server = fakeServer();
    const w = watch(server.connector, 2);
    await until(() => server.queries() >= 1);
    server.kill();
    // Two sessions see their connections close: two confirmations (one in flight, one after it).
    w.checker.reportFailure('r1', new Error('Connection terminated unexpectedly'), 'session');
    w.checker.reportFailure('r1', terminated, 'session');
    await until(() => w.changes.length > 0);
    expect(w.changes).toHaveLength(1);
    expect(w.changes[0]?.state).toBe('down');
    expect(w.changes[0]?.via).toBe('health');
    expect(w.changes[0]?.cause).toMatch(/^unreachable: .*ECONNREFUSED/);
    expect(w.checker.isHealthy('r1')).toBe(false);
    // The sessions' ends are reported once their probes answered: the server gone, so unreachable.
    await until(() => w.failures.filter((f) => f.via === 'session').length === 2);
    expect(w.failures.filter((f) => f.via === 'session').map((f) => f.cause)).toEqual([
      'unreachable',
      'unreachable',
    ]);
    w.checker.stop();
  });

  it("a fast shutdown: the sessions' 57P01, then probes answered 57P03, mark it down", async () => {
    const server = fakeServer();
    const w = watch(server.connector, 2);
    await until(() => server.queries() >= 1);
    server.kill('shutting-down');
    w.checker.reportFailure('r1', terminated, 'session');
    w.checker.reportFailure('r1', terminated, 'session');
    await until(() => w.changes.length > 0);
    expect(w.changes).toEqual([
      { state: 'down', via: 'health', cause: 'unreachable: the database system is shutting down' },
    ]);
    w.checker.stop();
  });

  it('57P03 to the checks alone (a server starting up) never marks it down', async () => {
    const server = fakeServer('shutting-down');
    const w = watch(server.connector, 1);
    await until(() => w.failures.length >= 1);
    expect(w.failures.map((f) => f.cause)).toEqual(['overloaded']);
    expect(w.changes).toEqual([]);
    w.checker.stop();
  });

  it('a refused connect still counts at once, without a probe', async () => {
    const server = fakeServer();
    const w = watch(server.connector, 2);
    await until(() => server.queries() >= 1);
    const opens = server.opens();
    expect(w.checker.reportFailure('r1', sysError('ECONNREFUSED'), 'connect')).toBe('unreachable');
    expect(w.checker.reportFailure('r1', sysError('ECONNREFUSED'), 'connect')).toBe('unreachable');
    expect(w.changes).toEqual([{ state: 'down', via: 'connect', cause: 'unreachable: read ECONNREFUSED' }]);
    expect(server.opens()).toBe(opens);
    w.checker.stop();
  });
});
