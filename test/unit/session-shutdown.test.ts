// --shutdown-sessions: the sessions' connector ends every session on a replica marked down at
// once (a statement in flight fails now, an idle session hears of it, a connect under way fails),
// and leaves the other replicas' sessions alone.
import { describe, expect, it } from 'vitest';
import type { Connector, DbConnection, OpenOptions, StatementWaiter } from '../../src/cluster/connector.js';
import { SessionShutdown, SessionShutdownError } from '../../src/bench/session-shutdown.js';

/** A connection whose statements never answer (a partitioned server), or with `run` when asked. */
function hanging(withRun: boolean): DbConnection & { ended: number[] } {
  const ended: number[] = [];
  return {
    ended,
    query: () => new Promise<number>(() => undefined),
    ...(withRun ? { run: (_t: string, _v: unknown, _w: StatementWaiter) => undefined } : {}),
    end: async (waitMs: number) => {
      ended.push(waitMs);
    },
  };
}

function opts(errors: Error[]): OpenOptions {
  return { connectTimeoutMs: 1000, applicationName: 'plb-premium', onError: (e) => errors.push(e) };
}

describe('SessionShutdown', () => {
  it('fails a statement in flight at once, tells an idle session, counts both', async () => {
    const conns: ReturnType<typeof hanging>[] = [];
    const inner: Connector = {
      open: async () => {
        const c = hanging(false);
        conns.push(c);
        return c;
      },
    };
    const s = new SessionShutdown(inner);
    const errors: Error[] = [];
    const busy = await s.connector.open('r2', opts(errors));
    const idle = await s.connector.open('r2', opts(errors));
    const other = await s.connector.open('r1', opts(errors));
    const inFlight = busy.query('select pg_sleep(100)');
    expect(s.shutDown('r2')).toEqual({ sessions: 2, connects: 0 });
    await expect(inFlight).rejects.toBeInstanceOf(SessionShutdownError);
    // The idle one heard of it through its error listener, once; its next statement fails too.
    expect(errors).toHaveLength(1);
    expect(errors[0]).toBeInstanceOf(SessionShutdownError);
    await expect(idle.query('select 1')).rejects.toBeInstanceOf(SessionShutdownError);
    // Both dropped at once; the other replica's session untouched.
    expect(conns[0]?.ended).toEqual([0]);
    expect(conns[1]?.ended).toEqual([0]);
    expect(conns[2]?.ended).toEqual([]);
    expect(s.shutDown('r2')).toEqual({ sessions: 0, connects: 0 });
    await other.end(1000);
    expect(conns[2]?.ended).toEqual([1000]);
    expect(s.shutDown('r1')).toEqual({ sessions: 0, connects: 0 });
  });

  it('a connection with run(): its waiter hears the shutdown once', async () => {
    const inner: Connector = { open: async () => hanging(true) };
    const s = new SessionShutdown(inner);
    const conn = await s.connector.open('r3', opts([]));
    const heard: (Error | undefined)[] = [];
    conn.run?.('select 1', undefined, { statementDone: (e) => heard.push(e) });
    s.shutDown('r3');
    expect(heard).toHaveLength(1);
    expect(heard[0]).toBeInstanceOf(SessionShutdownError);
  });

  it('a connect under way fails at once, and the connection that comes late is dropped', async () => {
    let finish: (c: DbConnection) => void = () => undefined;
    const late = hanging(false);
    const inner: Connector = { open: () => new Promise<DbConnection>((resolve) => (finish = resolve)) };
    const s = new SessionShutdown(inner);
    const opening = s.connector.open('r2', opts([]));
    expect(s.shutDown('r2')).toEqual({ sessions: 0, connects: 1 });
    await expect(opening).rejects.toBeInstanceOf(SessionShutdownError);
    finish(late);
    await new Promise((r) => setTimeout(r, 0));
    expect(late.ended).toEqual([0]);
  });

  it('a statement that answered before the shutdown keeps its answer', async () => {
    const inner: Connector = {
      open: async () => ({ query: async () => 3, end: async () => undefined }),
    };
    const s = new SessionShutdown(inner);
    const conn = await s.connector.open('r1', opts([]));
    expect(await conn.query('select 1')).toBe(3);
    s.shutDown('r1');
    await expect(conn.query('select 1')).rejects.toBeInstanceOf(SessionShutdownError);
  });
});
