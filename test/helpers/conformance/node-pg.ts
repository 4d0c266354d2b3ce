// node-postgres (pg) in the conformance corpus: named statements and a named portal read 3 rows
// per Execute, binary results, COPY through the connection's copyData events (pg has no COPY API
// of its own), notices, Client.cancel, the three auth methods, TLS. No pipeline mode: n/a.
import { createHash } from 'node:crypto';
import pg from 'pg';
import {
  BIG_ROW,
  COPY_IN,
  COPY_IN_CHECK,
  COPY_IN_TABLE,
  COPY_LONG,
  COPY_OUT,
  GONE_AFTER,
  copyInData,
  MID_ERROR,
  NA,
  NOTICES,
  ROWS,
  TYPES,
  md5,
  portFor,
  type ClientTarget,
  type Conn,
  type Feature,
  type Results,
} from './common.js';
import { runAll } from './libpq.js';

/** The client's socket-level connection (pg does not type it). */
interface Wire {
  on(event: string, f: (msg: { chunk?: Buffer }) => void): void;
  stream: { destroy(): void; encrypted?: boolean };
  sync(): void;
  query(text: string): void;
  sendCopyFromChunk(chunk: Buffer): void;
  endCopyFrom(): void;
}
const wire = (c: pg.Client): Wire => (c as unknown as { connection: Wire }).connection;

export async function nodePgResults(t: ClientTarget, features: readonly Feature[]): Promise<Results> {
  async function connect(c: Conn = {}): Promise<pg.Client> {
    const client = new pg.Client({
      host: t.host,
      port: portFor(t, c),
      database: t.database,
      user: c.user ?? t.user,
      password: c.user === undefined ? t.password : c.password,
      ssl: c.tls ? { rejectUnauthorized: false } : false,
      connectionTimeoutMillis: 10_000,
    });
    client.on('error', () => undefined);
    await client.connect();
    return client;
  }
  async function session<T>(f: (c: pg.Client) => Promise<T>, c: Conn = {}): Promise<T> {
    const client = await connect(c);
    try {
      return await f(client);
    } finally {
      await client.end();
    }
  }
  const one = async (c: pg.Client, sql: string): Promise<unknown> =>
    (await c.query({ text: sql, rowMode: 'array' })).rows[0]?.[0];
  const code = (p: Promise<unknown>): Promise<string> =>
    p.then(
      () => 'none',
      (e: { code?: string }) => e.code ?? '?',
    );
  /**
   * A submitted Query (client.query returns it, not a promise) as a promise of its end. An error in
   * a row-limited portal leaves the server waiting for a Sync that pg does not send (pg-cursor
   * sends it): sent here, as pg-cursor does.
   */
  const ended = (c: pg.Client, q: pg.Query, limited = false): Promise<unknown> =>
    new Promise((resolve, reject) => {
      q.on('end', resolve);
      q.on('error', (e) => {
        if (limited) wire(c).sync();
        reject(e);
      });
      c.query(q);
    });
  /** A named portal read `rows` at a time: the rows before the end or the error, and the Executes. */
  async function portal(c: pg.Client, text: string, rows: number): Promise<unknown> {
    let suspended = 0;
    const seen: unknown[] = [];
    wire(c).on('portalSuspended', () => void suspended++);
    // pg's types leave out the portal and row limit it takes.
    const q = new pg.Query({ text, portal: 'conform_p', rows, rowMode: 'array' } as pg.QueryConfig);
    q.on('row', (r: unknown) => void seen.push(r));
    const error = await code(ended(c, q, true));
    return { rows: seen.length, md5: md5(JSON.stringify(seen)), suspended, error };
  }
  /** A COPY TO STDOUT read from the connection's copyData messages; stop: when to drop the socket. */
  async function copyOut(c: pg.Client, sql: string, stop?: number): Promise<{ bytes: number; md5: string }> {
    // Hashed as it comes: a chunk is a view of the parser's buffer, reused for the next message.
    const h = createHash('md5');
    let bytes = 0;
    wire(c).on('copyData', (m) => {
      h.update(m.chunk!);
      bytes += m.chunk!.length;
      if (stop !== undefined && bytes >= stop) wire(c).stream.destroy();
    });
    await c.query(sql).catch((e: Error) => {
      if (stop === undefined) throw e;
    });
    return { bytes, md5: h.digest('hex') };
  }
  /**
   * A COPY FROM STDIN of `data` (pg has no COPY API: a submittable answers the CopyInResponse with
   * the data in 64 KiB CopyData messages, then CopyDone): its command tag, or its error's code.
   */
  const copyIn = (c: pg.Client, sql: string, data: Buffer): Promise<string> =>
    new Promise((resolve) => {
      let said = '?';
      c.query({
        submit: (w: Wire) => w.query(sql),
        handleCopyInResponse: (w: Wire) => {
          for (let i = 0; i < data.length; i += 65_536) w.sendCopyFromChunk(data.subarray(i, i + 65_536));
          w.endCopyFrom();
        },
        handleCommandComplete: (m: { text: string }) => void (said = m.text),
        handleError: (e: { code?: string }) => void (said = e.code ?? '?'),
        handleReadyForQuery: () => resolve(said),
      } as never);
    });
  const auth = async (user: string, password?: string): Promise<unknown> => {
    const ok = await session(
      async (c) => [await one(c, 'select current_user::text'), await one(c, 'select 1')],
      {
        user,
        password,
      },
    );
    if (password === undefined) return { ok };
    const bad = await connect({ user, password: `wrong-${password}` }).then(
      async (c) => (await c.end(), 'accepted'),
      (e: { code?: string; message: string }) => `${e.code} ${e.message}`,
    );
    return { ok, bad };
  };
  const probes: Record<Feature, () => Promise<unknown>> = {
    extended: () =>
      session(async (c) => {
        const named: unknown[] = [];
        for (let i = 1; i <= 10; i++) {
          const r = await c.query({
            name: 'conform_s',
            text: 'select $1::int * 2',
            values: [i],
            rowMode: 'array',
          });
          named.push((r.rows[0] as unknown[])[0]);
        }
        return { named, portal: await portal(c, ROWS, 3) };
      }),
    pipeline: async () => NA,
    binary: () =>
      session(async (c) => {
        // Named: pg asks for binary results only with the extended protocol. pg 8 decodes every
        // field as UTF-8 text (its parser's binary mode is never switched on), so its own binary
        // parsers fail: the fields are taken as pg hands them over, as UTF-8 bytes in hex.
        const raw = { getTypeParser: () => (v: string) => v };
        const r = await c.query({
          name: 'conform_b',
          text: TYPES,
          binary: true,
          rowMode: 'array',
          types: raw,
        } as never);
        const row = (r as pg.QueryArrayResult).rows[0]!;
        return {
          formats: (r as pg.QueryArrayResult).fields.map((f) => f.format),
          values: row.map((v) => (v === null ? null : Buffer.from(String(v)).toString('hex'))),
        };
      }),
    'big-row': () =>
      session(async (c) => {
        const v = (await one(c, BIG_ROW)) as string;
        return { length: v.length, md5: md5(v) };
      }),
    'copy-out': () => session((c) => copyOut(c, COPY_OUT)),
    'copy-in': () =>
      session(
        async (c) => {
          await c.query(COPY_IN_TABLE);
          const copied = await copyIn(c, COPY_IN, Buffer.from(copyInData()));
          return { copied, loaded: (await c.query(COPY_IN_CHECK)).rows[0] as unknown };
        },
        { primary: true },
      ),
    notice: () =>
      session(async (c) => {
        const seen: unknown[] = [];
        c.on('notice', (n) => seen.push([n.severity, n.code, n.message]));
        await c.query(NOTICES);
        return { notices: seen };
      }),
    cancel: () =>
      session(async (c) => {
        const word = `node-${t.tag}`;
        const q = new pg.Query(`select pg_sleep(30), '${word}'`);
        const done = code(ended(c, q));
        await t.untilActive(word);
        // Client.cancel (untyped): a new connection to the same port sends the CancelRequest.
        const canceller = new pg.Client({ host: t.host, port: t.port }) as unknown as {
          cancel(c: pg.Client, q: pg.Query): void;
        };
        canceller.cancel(c, q);
        return { error: await done, after: await one(c, "select 'ok'") };
      }),
    'auth-scram': () => auth('conform_scram', t.authPassword),
    'auth-md5': () => auth('conform_md5', t.authPassword),
    'auth-trust': () => auth('conform_trust'),
    tls: () =>
      session(
        async (c) => ({ encrypted: wire(c).stream.encrypted === true, value: await one(c, 'select 1') }),
        {
          tls: true,
        },
      ),
    'error-mid-result': () =>
      session(async (c) => ({
        portal: await portal(c, MID_ERROR, 2),
        plain: await code(c.query(MID_ERROR)),
        after: await one(c, "select 'ok'"),
      })),
    'client-gone-copy': async () => {
      const gone = await connect();
      const { bytes } = await copyOut(gone, COPY_LONG, GONE_AFTER);
      return { read_some: bytes >= GONE_AFTER, next: await session((c) => one(c, "select 'ok'")) };
    },
  };
  return runAll(features, probes);
}
