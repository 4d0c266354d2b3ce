// What the conformance runners share: the corpus's feature names, the probe queries, a child
// process runner and the canonical form of a refused connection's message.
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { createHash } from 'node:crypto';
import { sleep } from '../proxy-setup.js';

export const FEATURES = [
  'extended',
  'pipeline',
  'binary',
  'big-row',
  'copy-out',
  'copy-in',
  'notice',
  'cancel',
  'auth-scram',
  'auth-md5',
  'auth-trust',
  'tls',
  'error-mid-result',
  'client-gone-copy',
] as const;
export type Feature = (typeof FEATURES)[number];
/** A feature's canonical result, or 'n/a' where it does not apply to the client. */
export type Results = Partial<Record<Feature, unknown>>;
export const NA = 'n/a';

export const ROWS = 'select n, md5(n::text) from generate_series(1, 10) n';
export const BIG_ROW = "select repeat(md5('plb'), 2097152)"; // 64 MiB of text
export const COPY_OUT = 'copy (select n, md5(n::text) from generate_series(1, 100000) n) to stdout';
export const COPY_LONG = "copy (select n, repeat('z', 100) from generate_series(1, 5000000) n) to stdout";
export const MID_ERROR = 'select 1 / (n - 5) from generate_series(1, 10) n';
export const NOTICES =
  "do $$ begin raise notice 'conform notice %', 42; raise warning 'conform warning'; end $$";
export const TYPES =
  "select 42::int4, 9007199254740993::int8, 1.5::float8, 12345.6789::numeric, 'h\u00e9llo'::text," +
  " '\\xdeadbeef'::bytea, true, '2020-01-02 03:04:05.678+00'::timestamptz," +
  " 'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11'::uuid, array[1, 2, 3]::int4[], null::int4";
/**
 * The COPY in cell, on the primary (directly, or through the proxy's primary listener): a temporary
 * table (the session's own, so the runs at once never meet), COPY_IN_ROWS rows in COPY's text
 * format (an escaped tab and backslash, non-ASCII text, a NULL every 100th), then what was loaded.
 * The probes in Java and Python build the same rows (copyInRow).
 */
export const COPY_IN_TABLE = 'create temp table conform_in (id int, s text)';
export const COPY_IN = 'copy conform_in from stdin';
export const COPY_IN_ROWS = 20_000;
export const COPY_IN_CHECK =
  "select count(*)::int as n, md5(string_agg(id || ':' || coalesce(s, '<null>'), ',' order by id)) as md5" +
  ' from conform_in';
export const copyInRow = (i: number): string => `${i}\t${i % 100 === 0 ? '\\N' : `r${i}\\t\u00e9\\\\`}\n`;
export const copyInData = (): string =>
  Array.from({ length: COPY_IN_ROWS }, (_, i) => copyInRow(i + 1)).join('');
/** Bytes of a COPY read before the client goes. */
export const GONE_AFTER = 65_536;

/** Where a runner connects and as whom. */
export interface ClientTarget {
  host: string;
  port: number;
  tlsPort: number;
  /** Where the COPY in cell connects: the primary, or the proxy's primary listener. */
  primaryPort: number;
  database: string;
  user: string;
  password: string;
  authPassword: string;
  /** A distinct word for this run, in its pg_sleep query (so the test can find it). */
  tag: string;
  /** Resolves once a query containing `text` is active on the server (the cancel cells). */
  untilActive(text: string): Promise<void>;
}

export interface RunResult {
  code: number;
  out: string;
  err: string;
}

export function run(
  cmd: string,
  args: string[],
  o: {
    env?: NodeJS.ProcessEnv;
    input?: string;
    timeoutMs?: number;
    onChild?: (c: ChildProcess) => void;
  } = {},
): Promise<RunResult> {
  return new Promise((resolve) => {
    const child = execFile(
      cmd,
      args,
      { env: o.env ?? process.env, encoding: 'utf8', timeout: o.timeoutMs ?? 60_000, maxBuffer: 256 << 20 },
      (error, stdout, stderr) =>
        resolve({
          code: error ? (typeof error.code === 'number' ? error.code : -1) : 0,
          out: stdout,
          err: stderr,
        }),
    );
    child.stdin?.end(o.input ?? '');
    o.onChild?.(child);
  });
}

/** Spawns a child and resolves with it and its first `bytes` of stdout (for the client-gone cells). */
export function spawnUntil(
  cmd: string,
  args: string[],
  env: NodeJS.ProcessEnv,
  bytes: number,
): Promise<{ child: ChildProcess; read: number }> {
  return new Promise((resolve, reject) => {
    const child = spawn(cmd, args, { env, stdio: ['ignore', 'pipe', 'ignore'] });
    let read = 0;
    child.stdout.on('data', (d: Buffer) => {
      read += d.length;
      if (read >= bytes) {
        child.stdout.removeAllListeners('data');
        resolve({ child, read });
      }
    });
    child.on('error', reject);
    child.on('exit', (code) => reject(new Error(`${cmd} exited (${code}) after ${read} bytes`)));
  });
}

export const md5 = (s: string | Buffer): string => createHash('md5').update(s).digest('hex');

/** A refused connection's reason without the client's host-and-port prefix. */
export function fatal(message: string): string {
  const i = message.indexOf('FATAL:');
  return (i >= 0 ? message.slice(i) : message).replace(/\s+/g, ' ').trim();
}

/** Polls until `check` holds (a bounded wait on a condition, never a fixed delay). */
export async function until(what: string, check: () => Promise<boolean>, ms = 20_000): Promise<void> {
  for (const end = Date.now() + ms; Date.now() < end; await sleep(50)) if (await check()) return;
  throw new Error(`timed out waiting for ${what}`);
}

/** How a probe connects: as whom, over TLS, and to the primary (the COPY in cell). */
export interface Conn {
  user?: string;
  password?: string;
  tls?: boolean;
  /** To the primary (the COPY in cell). */
  primary?: boolean;
}

/** The port a connection of `c` goes to. */
export const portFor = (t: ClientTarget, c: Conn): number =>
  c.tls ? t.tlsPort : c.primary ? t.primaryPort : t.port;
