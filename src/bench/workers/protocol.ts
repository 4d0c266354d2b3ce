/**
 * What the parent of a `--workers` run and its workers say to each other over the fork's IPC
 * channel. Times a worker reports are on the plan's timeline: ms since the parent's t0, which it
 * sends as an epoch time (performance.timeOrigin + performance.now(), the same on every process of
 * a host; across hosts as good as their clock sync).
 */
import type { Credentials, Endpoint } from '../../core/endpoint.js';
import type { BenchConfig } from '../../run-format/config.js';
import type { RunEvent } from '../../metrics/types.js';

/** Parent -> worker: everything a worker needs to run its share. */
export interface StartMessage {
  type: 'start';
  config: BenchConfig;
  endpoints: Endpoint[];
  creds: Credentials;
  ids: string[];
  /** This worker, of `count`: it owns instances i with i mod count = index. */
  index: number;
  count: number;
  /** The plan's t0 as an epoch time in ms (fractional). */
  t0EpochMs: number;
}

export type ParentMessage = StartMessage | { type: 'stop' };

/** A recorder call as sent: the method's name and its arguments, and the instance it came from. */
export type RecordedCall = [instance: number, method: string, ...args: unknown[]];

export type WorkerMessage =
  | { type: 'ready' }
  /** throughMs: every call of a value at or before it is in this message or an earlier one. */
  | { type: 'calls'; calls: RecordedCall[]; throughMs: number }
  | { type: 'event'; event: RunEvent }
  /** A line for the run's log (the parent prefixes the worker). */
  | { type: 'log'; line: string }
  | { type: 'done'; error?: string };

/** The epoch time now, at sub-millisecond resolution. */
export function epochNow(): number {
  return performance.timeOrigin + performance.now();
}
