// libpq's own clients in the conformance corpus: psql (15: no \startpipeline, no \bind) and
// pgbench (-M prepared / extended, \startpipeline). Each feature: its canonical result or n/a.
import type { ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  BIG_ROW,
  COPY_IN,
  COPY_IN_CHECK,
  COPY_IN_TABLE,
  COPY_LONG,
  COPY_OUT,
  copyInData,
  GONE_AFTER,
  MID_ERROR,
  NA,
  NOTICES,
  ROWS,
  fatal,
  md5,
  run,
  spawnUntil,
  portFor,
  type ClientTarget,
  type Conn,
  type Feature,
  type Results,
  type RunResult,
} from './common.js';

function conninfo(t: ClientTarget, c: Conn): string {
  const port = portFor(t, c);
  return [
    `host=${t.host} port=${port} dbname=${t.database} user=${c.user ?? t.user}`,
    `sslmode=${c.tls ? 'require' : 'disable'} connect_timeout=10`,
  ].join(' ');
}

function env(t: ClientTarget, c: Conn): NodeJS.ProcessEnv {
  const e: NodeJS.ProcessEnv = { ...process.env, PGAPPNAME: 'conform' };
  delete e.PGPASSWORD;
  const pw = c.user === undefined ? t.password : c.password;
  if (pw !== undefined) e.PGPASSWORD = pw;
  return e;
}

/** stderr lines, without psql's "psql:<stdin>:N:" prefixes. */
const lines = (s: string): string[] =>
  s
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l !== '');

export async function psqlResults(
  bin: string,
  t: ClientTarget,
  features: readonly Feature[],
): Promise<Results> {
  const psql = (
    sql: string[],
    c: Conn = {},
    input = '',
    onChild?: (c: ChildProcess) => void,
  ): Promise<RunResult> =>
    run(join(bin, 'psql'), [conninfo(t, c), '-XAt', ...sql.flatMap((s) => ['-c', s])], {
      env: env(t, c),
      input,
      onChild,
    });
  const whole = (r: RunResult): unknown => ({ code: r.code, out: lines(r.out), err: lines(r.err) });
  const auth = async (user: string, password?: string): Promise<unknown> => {
    const ok = whole(await psql(['select current_user, 1'], { user, password }));
    if (password === undefined) return { ok };
    const bad = await psql(['select 1'], { user, password: `wrong-${password}` });
    return { ok, bad: { code: bad.code, err: fatal(bad.err) } };
  };
  const probes: Record<Feature, () => Promise<unknown>> = {
    // FETCH_COUNT: a cursor, fetched 3 rows at a time.
    extended: async () => whole(await psql(['\\set FETCH_COUNT 3', ROWS])),
    pipeline: async () => NA,
    binary: async () => NA,
    'big-row': async () => {
      const r = await psql([BIG_ROW]);
      const v = r.out.replace(/\n$/, '');
      return { code: r.code, length: v.length, md5: md5(v) };
    },
    'copy-out': async () => {
      const r = await psql([COPY_OUT]);
      return { code: r.code, bytes: Buffer.byteLength(r.out), md5: md5(r.out) };
    },
    'copy-in': async () =>
      whole(await psql([COPY_IN_TABLE, COPY_IN, COPY_IN_CHECK], { primary: true }, `${copyInData()}\\.\n`)),
    notice: async () => whole(await psql([NOTICES])),
    cancel: async () => {
      // SIGINT once the sleep is running: psql sends the cancel request to where it connected.
      const word = `psql-${t.tag}`;
      let child: ChildProcess | undefined;
      const p = psql([`select pg_sleep(30), '${word}'`, "select 'ok'"], {}, '', (c) => (child = c));
      await t.untilActive(word);
      child!.kill('SIGINT');
      return whole(await p);
    },
    'auth-scram': () => auth('conform_scram', t.authPassword),
    'auth-md5': () => auth('conform_md5', t.authPassword),
    'auth-trust': () => auth('conform_trust'),
    tls: async () => {
      const r = await psql(['\\conninfo', 'select 1'], { tls: true });
      return {
        code: r.code,
        ssl: /SSL connection \(protocol: TLSv[\d.]+/.exec(r.out)?.[0] ?? null,
        out: lines(r.out).at(-1),
      };
    },
    'error-mid-result': async () => ({
      cursor: whole(await psql(['\\set FETCH_COUNT 2', MID_ERROR, "select 'ok'"])),
      plain: whole(await psql([MID_ERROR, "select 'ok'"])),
    }),
    'client-gone-copy': async () => {
      // psql killed (SIGKILL: no Terminate) once 64 KiB of a long COPY has arrived.
      const { child, read } = await spawnUntil(
        join(bin, 'psql'),
        [conninfo(t, {}), '-XAtc', COPY_LONG],
        env(t, {}),
        GONE_AFTER,
      );
      const gone = new Promise((r) => child.on('exit', r));
      child.kill('SIGKILL');
      await gone;
      return { read_some: read >= GONE_AFTER, next: whole(await psql(["select 'ok'"])) };
    },
  };
  return runAll(features, probes);
}

export async function pgbenchResults(
  bin: string,
  t: ClientTarget,
  features: readonly Feature[],
): Promise<Results> {
  const dir = mkdtempSync(join(tmpdir(), 'plb-conform-pgbench-'));
  const pgbench = async (script: string, args: string[], c: Conn = {}): Promise<unknown> => {
    const file = join(dir, `s${Math.random().toString(36).slice(2)}.sql`);
    writeFileSync(file, script);
    const r = await run(join(bin, 'pgbench'), ['-n', '-f', file, ...args, conninfo(t, c)], {
      env: env(t, c),
    });
    const keep = (l: string): boolean =>
      /^(number of (transactions actually processed|failed transactions)|pgbench: error|NOTICE|WARNING)/.test(
        l,
      );
    return {
      code: r.code,
      lines: lines(r.out + '\n' + r.err)
        .filter(keep)
        .map((l) => (l.includes('FATAL:') ? `pgbench: error: ${fatal(l)}` : l.replace(/ \(\d+\.\d+%\)/, ''))),
    };
  };
  const auth = async (user: string, password?: string): Promise<unknown> => {
    const ok = await pgbench('select current_user;\n', ['-t', '5'], { user, password });
    if (password === undefined) return { ok };
    return { ok, bad: await pgbench('select 1;\n', ['-t', '1'], { user, password: `wrong-${password}` }) };
  };
  const probes: Record<Feature, () => Promise<unknown>> = {
    extended: () =>
      pgbench('\\set x random(1, 10)\nselect :x::int * 2;\n', ['-M', 'prepared', '-t', '20', '-c', '2']),
    pipeline: () =>
      pgbench('\\startpipeline\nselect 1;\nselect 2;\nselect 3;\n\\endpipeline\n', [
        '-M',
        'extended',
        '-t',
        '20',
      ]),
    binary: async () => NA,
    'big-row': async () => NA,
    'copy-out': async () => NA,
    'copy-in': async () => NA,
    notice: () => pgbench(`${NOTICES};\n`, ['-t', '1']),
    cancel: async () => NA,
    'auth-scram': () => auth('conform_scram', t.authPassword),
    'auth-md5': () => auth('conform_md5', t.authPassword),
    'auth-trust': () => auth('conform_trust'),
    tls: () => pgbench('select 1;\n', ['-t', '5'], { tls: true }),
    'error-mid-result': () => pgbench(`${MID_ERROR};\n`, ['-M', 'extended', '-t', '1']),
    'client-gone-copy': async () => NA,
  };
  try {
    return await runAll(features, probes);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** Each feature in turn; a throw is that cell's result, the others still run. */
export async function runAll(
  features: readonly Feature[],
  probes: Record<Feature, () => Promise<unknown>>,
): Promise<Results> {
  const out: Results = {};
  for (const f of features) {
    try {
      out[f] = await probes[f]();
    } catch (e) {
      out[f] = { exception: (e as Error).message };
    }
  }
  return out;
}
