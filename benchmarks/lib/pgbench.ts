// pgbench as the benchmarks run it: a child process, its summary parsed, and the usual start on a
// fresh local cluster (pgbench -i on the primary, the replica caught up before anything is timed).
import { execFile } from 'node:child_process';
import { join } from 'node:path';
import type { Credentials, Endpoint } from '../../src/core/endpoint.js';
import { currentWalLsn, waitCaughtUp } from '../../src/cluster/pg-util.js';

/** Runs a program; its stdout, or an error carrying its stderr. */
export function runTool(
  file: string,
  args: string[],
  env: NodeJS.ProcessEnv,
  maxBuffer = 64 << 20,
): Promise<string> {
  return new Promise((resolve, reject) =>
    execFile(file, args, { env, encoding: 'utf8', maxBuffer }, (err, stdout, stderr) =>
      err ? reject(new Error(`${file} ${args.join(' ')}: ${stderr || err.message}`)) : resolve(stdout),
    ),
  );
}

/** What pgbench's summary says (NaN or undefined where it did not say it). */
export interface PgbenchSummary {
  tps: number;
  latencyMs: number;
  /** With -C: average connection time. */
  connectMs: number | undefined;
  transactions: number;
}

export function parsePgbench(out: string): PgbenchSummary {
  const num = (re: RegExp): number | undefined => {
    const m = re.exec(out);
    return m ? Number(m[1]) : undefined;
  };
  return {
    tps: num(/tps = ([\d.]+)/) ?? NaN,
    latencyMs: num(/latency average = ([\d.]+) ms/) ?? NaN,
    connectMs: num(/average connection time = ([\d.]+) ms/),
    transactions: num(/number of transactions actually processed: (\d+)/) ?? NaN,
  };
}

/** A cluster's connection facts for pgbench: env with the password, -U/-h, the two servers. */
export interface PgbenchTarget {
  creds: Credentials;
  primary: Endpoint;
  replica: Endpoint;
  env: NodeJS.ProcessEnv;
  /** -U user -h 127.0.0.1 */
  common: string[];
}

/**
 * pgbench -i (scale 1) on the primary of a cluster that is up, then waits until its first replica
 * has replayed it; endpoints() lists the primary first.
 */
export async function initPgbench(
  bin: string,
  driver: { credentials(): Promise<Credentials>; endpoints(): Endpoint[] },
): Promise<PgbenchTarget> {
  const creds = await driver.credentials();
  const [primary, replica] = driver.endpoints() as [Endpoint, Endpoint];
  const env = { ...process.env, PGPASSWORD: creds.password };
  const common = ['-U', creds.user, '-h', '127.0.0.1'];
  await runTool(
    join(bin, 'pgbench'),
    ['-i', '-q', '-s', '1', ...common, '-p', String(primary.port), creds.database],
    env,
  );
  await waitCaughtUp(replica, creds, await currentWalLsn(primary, creds), 60_000);
  return { creds, primary, replica, env, common };
}
