/**
 * Protocol conformance of `plb proxy`: a corpus of features, each run by five clients against the
 * standby directly and through the proxy, and the two results compared cell by cell. Clients:
 * psql and pgbench (libpq), pgJDBC, node-postgres and psycopg 3 (test/fixtures/conformance/ holds
 * the Java and Python probes; the libpq and node-postgres ones are in test/helpers/conformance/).
 * Features: the extended protocol (named statements, named portals with fetch sizes), pipeline
 * mode, binary results, a 64 MiB row, COPY out, COPY in (on the primary: directly, and through the
 * proxy's primary listener; the same rows loaded), notices, cancel, SCRAM, md5 and trust
 * authentication, TLS from the client (--tls-cert), an error in the middle of a result, and a
 * client gone in the middle of a COPY (the proxy and the standby go on, the next session is fine).
 * One local cluster (a primary and one standby) and one proxy with its defaults (the native relay
 * where built) and its primary listener for the file, plus a proxy with --tls-cert for the TLS cells (a TLS listener moves
 * every client of its proxy to Node's sockets). Prints the matrix. Skips without the server
 * binaries, and a client without its driver, except with CI=true (a failure there).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { findBinDir } from '../../src/cluster/local/binaries.js';
import { haveServerBinaries } from '../helpers/fixtures.js';
import { failInCiWithout } from '../helpers/proxy-setup.js';
import {
  FEATURES,
  NA,
  until,
  type ClientTarget,
  type Feature,
  type Results,
} from '../helpers/conformance/common.js';
import {
  compileJava,
  jdbcMissing,
  jdbcResults,
  psycopgMissing,
  psycopgResults,
} from '../helpers/conformance/fixtures.js';
import { pgbenchResults, psqlResults } from '../helpers/conformance/libpq.js';
import { nodePgResults } from '../helpers/conformance/node-pg.js';
import {
  AUTH_PASSWORD,
  upConformanceRig,
  type ConformanceRig,
  type Target,
} from '../helpers/conformance/rig.js';

const ci = process.env.CI === 'true';
const NAME = 'plbtest-proxy-conform';
const BASE_PORT = 14000;
const PROXY_PORT = 14010;
const TLS_PROXY_PORT = 14011;
const PRIMARY_PROXY_PORT = 14012;
const CLIENTS = ['psql', 'pgbench', 'pgjdbc', 'node-pg', 'psycopg'] as const;
type Client = (typeof CLIENTS)[number];
type Side = 'direct' | 'proxy';

failInCiWithout(haveServerBinaries, 'the proxy conformance test (no PostgreSQL server binaries)');

interface Cell {
  status: 'pass' | 'FAIL' | 'n/a' | 'skip';
  direct?: unknown;
  proxy?: unknown;
}

function cell(direct: unknown, proxy: unknown): Cell {
  if (direct === NA && proxy === NA) return { status: 'n/a' };
  const same = JSON.stringify(direct) === JSON.stringify(proxy);
  const broken = direct === undefined || JSON.stringify(direct).includes('"exception"');
  return { status: same && !broken ? 'pass' : 'FAIL', direct, proxy };
}

/** A failed cell: both results, for the reader to compare. */
function failures(cells: Record<Client, Record<Feature, Cell>>, clients: readonly Client[]): string[] {
  return clients.flatMap((c) =>
    FEATURES.filter((f) => cells[c][f].status === 'FAIL').flatMap((f) => [
      `${f} x ${c}:`,
      `  direct ${JSON.stringify(cells[c][f].direct)}`,
      `  proxy  ${JSON.stringify(cells[c][f].proxy)}`,
    ]),
  );
}

function matrixText(cells: Record<Client, Record<Feature, Cell>>, skipped: Map<Client, string>): string {
  const w = 18;
  const rows = [['feature', ...CLIENTS].map((s) => s.padEnd(w)).join('')];
  for (const f of FEATURES)
    rows.push([f, ...CLIENTS.map((c) => cells[c][f].status)].map((s) => s.padEnd(w)).join(''));
  for (const [c, why] of skipped) rows.push(`${c}: skipped (${why})`);
  return [...rows, ...failures(cells, CLIENTS)].join('\n');
}

describe.skipIf(!haveServerBinaries)(
  'plb proxy protocol conformance: proxy == direct, per feature and client',
  () => {
    let rig: ConformanceRig;
    let watcher: pg.Pool;
    let classDir: string;
    const skipped = new Map<Client, string>();
    const cells = {} as Record<Client, Record<Feature, Cell>>;
    let elapsedS = 0;

    beforeAll(async () => {
      const started = Date.now();
      classDir = mkdtempSync(join(tmpdir(), 'plb-conform-java-'));
      const [noPsycopg, noJdbc] = [await psycopgMissing(), jdbcMissing()];
      if (ci && (noPsycopg ?? noJdbc))
        throw new Error(`CI=true and ${noPsycopg ?? noJdbc}: every conformance client must run in CI`);
      if (noPsycopg) skipped.set('psycopg', noPsycopg);
      if (noJdbc) skipped.set('pgjdbc', noJdbc);
      // Compiled while the cluster comes up.
      const [r] = await Promise.all([
        upConformanceRig({
          name: NAME,
          basePort: BASE_PORT,
          proxyPort: PROXY_PORT,
          primaryProxyPort: PRIMARY_PROXY_PORT,
          tlsProxyPort: TLS_PROXY_PORT,
        }),
        noJdbc ? undefined : compileJava(classDir),
      ]);
      rig = r;
      const replicaPort = rig.direct.port;
      watcher = new pg.Pool({ ...rig.cluster.pgConfig(replicaPort), max: 2 });
      watcher.on('error', () => undefined);
      const bin = findBinDir();
      const target = (side: Side, client: Client): ClientTarget => {
        const t: Target = side === 'direct' ? rig.direct : rig.proxied;
        return {
          host: '127.0.0.1',
          ...t,
          database: rig.cluster.creds.database,
          user: rig.cluster.creds.user,
          password: rig.cluster.creds.password,
          authPassword: AUTH_PASSWORD,
          tag: `${client}-${side}`,
          untilActive: (word) =>
            until(`'${word}' active on the standby`, async () => {
              const q = await watcher.query<{ n: string }>(
                "select count(*) as n from pg_stat_activity where state = 'active' and pid <> pg_backend_pid()" +
                  ' and query like $1',
                [`%'${word}'%`],
              );
              return Number(q.rows[0]!.n) > 0;
            }),
        };
      };
      const runners: Record<Client, (t: ClientTarget) => Promise<Results>> = {
        psql: (t) => psqlResults(bin, t, FEATURES),
        pgbench: (t) => pgbenchResults(bin, t, FEATURES),
        pgjdbc: (t) => jdbcResults(classDir, t, FEATURES),
        'node-pg': (t) => nodePgResults(t, FEATURES),
        psycopg: (t) => psycopgResults(t, FEATURES),
      };
      // Every client, both sides, at once: each run's queries are its own (sessions, words).
      await Promise.all(
        CLIENTS.map(async (c) => {
          if (skipped.has(c)) {
            cells[c] = Object.fromEntries(FEATURES.map((f) => [f, { status: 'skip' }])) as Record<
              Feature,
              Cell
            >;
            return;
          }
          const [direct, proxy] = await Promise.all([
            runners[c](target('direct', c)),
            runners[c](target('proxy', c)),
          ]);
          cells[c] = Object.fromEntries(FEATURES.map((f) => [f, cell(direct[f], proxy[f])])) as Record<
            Feature,
            Cell
          >;
        }),
      );
      elapsedS = (Date.now() - started) / 1000;
      console.log(
        `protocol conformance, proxy vs direct (${elapsedS.toFixed(1)} s):\n${matrixText(cells, skipped)}`,
      );
    }, 240_000);

    afterAll(async () => {
      await watcher?.end();
      await rig?.down();
      if (classDir) rmSync(classDir, { recursive: true, force: true });
    }, 60_000);

    it.for(CLIENTS)(
      '%s: every feature gives the same result through the proxy as directly',
      (client, ctx) => {
        if (skipped.has(client)) ctx.skip(skipped.get(client));
        const failed = FEATURES.filter((f) => cells[client][f].status === 'FAIL');
        expect(failed, failures(cells, [client]).join('\n')).toEqual([]);
      },
    );

    it('applies where it should: n/a only for features the client has no way to use', () => {
      const na = (c: Client): Feature[] => FEATURES.filter((f) => cells[c][f].status === 'n/a');
      expect(na('psql')).toEqual(['pipeline', 'binary']);
      expect(na('pgbench')).toEqual([
        'binary',
        'big-row',
        'copy-out',
        'copy-in',
        'cancel',
        'client-gone-copy',
      ]);
      expect(na('node-pg')).toEqual(['pipeline']);
      for (const c of ['pgjdbc', 'psycopg'] as const) if (!skipped.has(c)) expect(na(c)).toEqual([]);
    });

    it("COPY in went through the proxy's primary listener: a session of every client that ran it", () => {
      const ran = (['psql', 'pgjdbc', 'node-pg', 'psycopg'] as const).filter((c) => !skipped.has(c));
      expect(rig.primaryListener.stats.classes.premium.ready).toBe(ran.length);
    });

    it('after the clients gone mid-COPY: no backend still sends their COPY, the proxy holds no session, a new one is served', async () => {
      await until('the gone clients’ COPY backends to end', async () => {
        const q = await watcher.query<{ n: string }>(
          "select count(*) as n from pg_stat_activity where query like 'copy (select n, repeat%'",
        );
        return Number(q.rows[0]!.n) === 0;
      });
      await until('the proxy to hold no session', async () => rig.proxy.sessionCount() === 0);
      const rows = await rig.query<{ ok: string }>(PROXY_PORT, "select 'ok' as ok");
      expect(rows).toEqual([{ ok: 'ok' }]);
    }, 60_000);
  },
);
