/**
 * A recorder call as a worker or a node recorded it ([instance, method, ...args], protocol.ts),
 * replayed into a recorder elsewhere: the parent of `--workers`, or `plb bench merge`. One replay
 * for both, so a value lands in the same place whichever process measured it.
 */
import type { ServiceClass } from '../../core/service-class.js';
import type { WorkerFigures } from '../../metrics/workers/worker-book.js';
import type { Recorder } from '../../metrics/types.js';
import type { RecordedCall } from './protocol.js';

/** The calls the sessions make (a worker sends only these; every node's are merged). */
export const CLIENT_CALLS: ReadonlySet<string> = new Set([
  'queryDone',
  'queryFailed',
  'sessionOpened',
  'sessionClosed',
  'replicaFailure',
  'admissionFailed',
  'sessionQueued',
]);

/** Where each call's time (plan ms) is among its arguments. */
const TIME_ARG: Record<string, number> = {
  queryDone: 2,
  queryFailed: 2,
  sessionOpened: 2,
  sessionClosed: 3,
  replicaFailure: 1,
  admissionFailed: 1,
  sessionQueued: 1,
  harnessCpu: 0,
  hostCpu: 0,
  loopDelay: 0,
  cpu: 0,
  replicaState: 0,
  lag: 0,
};

/** Is this a recorder method a replay may call (anything else in a file is ignored, not called)? */
export const isReplayable = (method: string): boolean => method in TIME_ARG;

/** The plan time of a recorded call (NaN for one that carries none). */
export function callTimeMs([, method, ...args]: RecordedCall): number {
  const i = TIME_ARG[method];
  const t = i === undefined ? undefined : args[i];
  return typeof t === 'number' ? t : NaN;
}

/** The worker's own figures of a call (queries, errors, sessions per class). */
export function bookFigures(figures: WorkerFigures, [, method, ...args]: RecordedCall): void {
  const cls = args[0] as ServiceClass;
  if (method === 'queryDone') figures.queryDone(cls, args[2] as number, args[3] as number);
  else if (method === 'queryFailed') figures.queryFailed(cls);
  else if (method === 'sessionOpened') figures.sessionOpened(cls);
}

/** Calls the recorder's method with the recorded arguments (only replayable methods). */
export function replayInto(recorder: Recorder, [, method, ...args]: RecordedCall): void {
  if (!isReplayable(method)) return;
  const r = recorder as unknown as Record<string, ((...a: unknown[]) => void) | undefined>;
  r[method]?.(...args);
}
