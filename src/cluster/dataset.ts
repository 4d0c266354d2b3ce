import type { Credentials, Endpoint } from '../core/endpoint.js';
import { currentWalLsn, waitCaughtUp, withClient } from './pg-util.js';

/** The table the workload's writer owns (workload/writer.ts), created with the dataset. */
export const WRITE_TABLE = 'plb_writes';

const CREATE_WRITE_TABLE = `CREATE TABLE IF NOT EXISTS ${WRITE_TABLE} (
  id int PRIMARY KEY, n bigint NOT NULL, payload text NOT NULL, updated_at timestamptz NOT NULL)`;

/**
 * The generated dataset: `plb_items(id, grp, val, payload)` with `rows` rows, loaded on the
 * primary and replicated. A marker row in `plb_meta` keeps a reload from happening when the
 * table already has the requested size. The write workload's table (writer.ts) is created here too,
 * so the standbys have it before a run writes.
 */
export async function ensureDataset(
  primary: Endpoint,
  replicas: readonly Endpoint[],
  creds: Credentials,
  rows: number,
  log: (line: string) => void = () => undefined,
): Promise<{ loaded: boolean; ms: number }> {
  const t0 = Date.now();
  const loaded = await withClient(
    primary,
    creds,
    async (c) => {
      await c.query('CREATE TABLE IF NOT EXISTS plb_meta (key text PRIMARY KEY, value text NOT NULL)');
      await c.query(CREATE_WRITE_TABLE);
      const r = await c.query<{ value: string }>("SELECT value FROM plb_meta WHERE key = 'dataset_rows'");
      if (r.rows[0]?.value === String(rows)) return false;
      log(`loading dataset: ${rows} rows on the primary`);
      await c.query('DROP TABLE IF EXISTS plb_items');
      await c.query(
        `CREATE TABLE plb_items (id int PRIMARY KEY, grp int NOT NULL, val double precision NOT NULL, payload text NOT NULL)`,
      );
      // Deterministic contents: the same rows on every run, so query costs are comparable.
      await c.query(
        `INSERT INTO plb_items
           SELECT i, i % 100, ((i * 7919) % 10007) / 10007.0, md5(i::text)
             FROM generate_series(1, $1::int) AS i`,
        [rows],
      );
      await c.query('ANALYZE plb_items');
      await c.query(
        "INSERT INTO plb_meta VALUES ('dataset_rows', $1) ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value",
        [String(rows)],
      );
      return true;
    },
    { timeoutMs: 10_000, queryTimeoutMs: 600_000 },
  );
  const lsn = await currentWalLsn(primary, creds);
  for (const r of replicas) await waitCaughtUp(r, creds, lsn, 300_000);
  return { loaded, ms: Date.now() - t0 };
}
