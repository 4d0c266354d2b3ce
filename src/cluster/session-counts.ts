/**
 * Per-replica, per-class session counts read from the replicas themselves: the `replica` router
 * view (the load-report approach: every router learns what every other one put there, with no
 * store of plb's own). On PostgreSQL, pg_stat_activity with the class in application_name.
 */
import type pg from 'pg';
import type { Credentials, Endpoint } from '../core/endpoint.js';
import { errorText, PlbError } from '../core/errors.js';
import { classApplicationName, SERVICE_CLASSES, type ServiceClass } from '../core/service-class.js';
import { openPgClient, pgConnection } from './connector.js';

export type ClassCounts = Record<ServiceClass, number>;

/** Reads the counts of one replica at a time; one connection per replica, held between reads. */
export interface SessionCountReader {
  /** The replica's sessions by class now; rejects when it cannot be read (down, paused, refused). */
  read(replica: string): Promise<ClassCounts>;
  /** Connections it holds on each replica (cluster sizing). */
  readonly connectionsPerReplica: number;
  close(): Promise<void>;
}

/** The application_name of the reader's own connections (never counted as a class). */
const VIEW_APPLICATION_NAME = 'plb-view';

/**
 * A session's class is its application_name up to the first `:` (`plb-premium`, as the bench's
 * sessions connect, or `plb-premium:<client's name>`, as the proxy marks them: markApplicationName).
 */
const COUNT_SQL =
  "SELECT split_part(application_name, ':', 1) AS application_name, count(*)::int AS n FROM pg_stat_activity WHERE split_part(application_name, ':', 1) = ANY($1) GROUP BY 1";

/** The counts of one pg_stat_activity answer (a class with no row has none). */
export function countsOfRows(rows: readonly { application_name: string; n: number }[]): ClassCounts {
  const out: ClassCounts = { premium: 0, freemium: 0 };
  for (const cls of SERVICE_CLASSES)
    out[cls] = rows.find((r) => r.application_name === classApplicationName(cls))?.n ?? 0;
  return out;
}

/**
 * Reads every replica once, so a replica the reader cannot read is one line before anything
 * starts (the reader closed then); `what` names the option that asked (`--router-view replica`).
 */
export async function readEveryReplica(
  reader: SessionCountReader,
  ids: readonly string[],
  what: string,
): Promise<void> {
  for (const id of ids) {
    try {
      await reader.read(id);
    } catch (err) {
      await reader.close();
      throw new PlbError(
        'BAD_INPUT',
        `${what}: cannot read the sessions of ${id} from pg_stat_activity: ${errorText(err)}`,
      );
    }
  }
}

/** The reader of a real cluster: one pg connection per replica, reopened after a failure. */
export function pgSessionCounts(
  endpoints: readonly Endpoint[],
  creds: Credentials,
  timeoutMs: number,
): SessionCountReader {
  const byId = new Map(endpoints.map((e) => [e.id, e] as const));
  const clients = new Map<string, pg.Client>();
  const drop = async (id: string): Promise<void> => {
    const c = clients.get(id);
    clients.delete(id);
    if (c) await pgConnection(c).end(0);
  };
  const names = SERVICE_CLASSES.map(classApplicationName);
  return {
    connectionsPerReplica: 1,
    async read(replica) {
      const ep = byId.get(replica);
      if (ep === undefined) throw new PlbError('INTERNAL', `no endpoint for ${replica}`);
      try {
        let c = clients.get(replica);
        if (c === undefined) {
          c = await openPgClient(ep, creds, {
            connectTimeoutMs: timeoutMs,
            queryTimeoutMs: timeoutMs,
            applicationName: VIEW_APPLICATION_NAME,
            // A reader whose server went away is dropped at its next read.
            onError: () => undefined,
          });
          clients.set(replica, c);
        }
        const res = await c.query<{ application_name: string; n: number }>(COUNT_SQL, [names]);
        return countsOfRows(res.rows);
      } catch (err) {
        await drop(replica);
        throw err;
      }
    },
    async close() {
      await Promise.all([...clients.keys()].map(drop));
    },
  };
}
