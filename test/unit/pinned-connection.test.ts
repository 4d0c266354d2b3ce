import { describe, expect, it } from 'vitest';
import type { Connector, DbConnection } from '../../src/cluster/connector.js';
import { DataSource } from '../../src/workload/data-source.js';
import { createRouter } from '../../src/router/index.js';

/** A pg-like connection (no `run`): each query answers with the next of `answers`. */
function queryOnly(answers: (Error | undefined)[]): Connector {
  return {
    open: async () => {
      const conn: DbConnection = {
        query: async () => {
          const a = answers.shift();
          if (a !== undefined) throw a;
          return 1;
        },
        end: async () => undefined,
      };
      return conn;
    },
  };
}

function told(run: (w: { statementDone(err: Error | undefined): void }) => void): Promise<Error | undefined> {
  return new Promise((resolve) => run({ statementDone: resolve }));
}

describe('a pinned connection over a connection without run (pg)', () => {
  it('tells each statement once; a statement error keeps the session, a lost socket breaks it', async () => {
    const statementError = Object.assign(new Error('division by zero'), { code: '22012', severity: 'ERROR' });
    const reset = Object.assign(new Error('read ECONNRESET'), { code: 'ECONNRESET' });
    const lost: string[] = [];
    const ds = new DataSource({
      router: createRouter({ strategy: 'rr', replicas: ['r1'] }),
      connector: queryOnly([undefined, statementError, reset]),
      connectTimeoutMs: 1000,
      queryTimeoutMs: 1000,
      now: () => 0,
      onSessionError: (replica) => lost.push(replica),
    });
    const conn = await ds.getConnection({ class: 'premium' });
    expect(await told((w) => conn.run('SELECT 1', [], w))).toBeUndefined();
    const e1 = await told((w) => conn.run('SELECT 1/0', [], w));
    expect(e1?.message).toMatch(/division by zero/);
    expect(conn.isBroken).toBe(false);
    const e2 = await told((w) => conn.run('SELECT 1', [], w));
    expect(e2?.message).toMatch(/ECONNRESET/);
    expect(conn.isBroken).toBe(true);
    expect(lost).toEqual(['r1']);
    await conn.close();
    const e3 = await told((w) => conn.run('SELECT 1', [], w));
    expect(e3?.message).toMatch(/not open/);
  });
});
