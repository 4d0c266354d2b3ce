/**
 * What a node of several (`--worker-index`) does apart from a run of its own: index 0 prepares the
 * cluster and claims the fault injector; the others only join (no reset, no dataset, no lock: they
 * change nothing); every node starts at the shared `--start-at`.
 */
import type { Clock } from '../../clock/index.js';
import { openPgClient, pgConnection } from '../../cluster/connector.js';
import type { ClusterDriver } from '../../cluster/driver.js';
import type { Credentials, Endpoint } from '../../core/endpoint.js';
import { errorText, PlbError } from '../../core/errors.js';
import { epochNow } from './protocol.js';

/** The advisory lock the injecting node holds on the primary for its run (any fixed number will do). */
const INJECTOR_LOCK_KEY = 4_931_049;

/** A node past index 0: the cluster's endpoints and credentials, nothing changed. */
export async function joinCluster(
  driver: ClusterDriver,
  replicas: number,
): Promise<{ primary: Endpoint; replicas: Endpoint[]; creds: Credentials }> {
  const endpoints = driver.endpoints();
  const primary = endpoints.find((e) => e.kind === 'primary');
  const reps = endpoints.filter((e) => e.kind === 'replica');
  if (!primary) throw new PlbError('CLUSTER_NOT_FOUND', 'the cluster has no primary endpoint');
  if (reps.length < replicas)
    throw new PlbError(
      'BAD_INPUT',
      `--worker-index: the plan needs ${replicas} replicas, the cluster has ${reps.length}`,
    );
  return { primary, replicas: reps, creds: await driver.credentials() };
}

/**
 * Index 0 injects the plan's faults: it holds a session advisory lock on the primary for the whole
 * run, so a second node with index 0 (on any host) is refused before it starts. Returns the release.
 */
export async function claimInjector(
  primary: Endpoint,
  creds: Credentials,
  timeoutMs: number,
): Promise<() => Promise<void>> {
  let client;
  try {
    client = await openPgClient(primary, creds, {
      connectTimeoutMs: timeoutMs,
      applicationName: 'plb-injector',
      onError: () => undefined,
    });
  } catch (err) {
    throw new PlbError(
      'BAD_INPUT',
      `--worker-index 0: cannot reach the primary to claim the faults: ${errorText(err)}`,
    );
  }
  const conn = pgConnection(client);
  // The lock must not keep a failed run's process alive: it goes with the process either way.
  (client as unknown as { connection?: { stream?: { unref?: () => void } } }).connection?.stream?.unref?.();
  const res = await client.query<{ ok: boolean }>('SELECT pg_try_advisory_lock($1) AS ok', [
    INJECTOR_LOCK_KEY,
  ]);
  if (res.rows[0]?.ok !== true) {
    await conn.end(0);
    throw new PlbError(
      'BAD_INPUT',
      '--worker-index 0: another node with index 0 is injecting faults into this cluster (its advisory lock on the primary is held)',
    );
  }
  return () => conn.end(0);
}

/** Refuses a start time that passed while this node got ready (its schedule would be cut). */
export function checkStartAhead(startAtMs: number): void {
  const late = epochNow() - startAtMs;
  if (late >= 0)
    throw new PlbError(
      'BAD_INPUT',
      `--start-at: passed ${(late / 1000).toFixed(1)} s before this node was ready (give the nodes more time)`,
    );
}

/**
 * Waits for the shared start; returns the run's t0 on `clock` (its reading at startAtMs, so the
 * plan's timeline is the same on every node however late this one woke).
 */
export async function untilStart(startAtMs: number, clock: Clock): Promise<number> {
  const wait = startAtMs - epochNow();
  if (wait > 0) await clock.sleep(wait);
  return clock.now() - (epochNow() - startAtMs);
}
