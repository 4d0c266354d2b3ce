/**
 * A session's way to a replica: admit (perhaps after a wait for a slot), connect and send the
 * startup packet, wait for the server's first answer (on Node's sockets, node-session.ts, or the native
 * front door's, native-session.ts: a Dialer). Until that answer reaches the client nothing is lost
 * by trying again: a refused or reset connection, or a server that answers with a FATAL of a dying
 * server (57P01/57P02, 08xxx), is reported and the session admitted anew (the failures count
 * toward fall, so the router soon leaves that replica). A server that does not answer within the
 * connect timeout is reported as slow and the client told so.
 */
import { classifyFailure, isDeathEvidence } from '../../core/failure-cause.js';
import { isPlbError } from '../../core/errors.js';
import type { ServiceClass } from '../../core/service-class.js';
import type { SessionHost, SessionTarget } from './session-host.js';
import { decodeServerError } from '../protocol/server-messages.js';
import { MSG_ERROR } from '../protocol/wire.js';

/** What routing needs of its session. */
export interface RouteSteps {
  readonly host: SessionHost;
  readonly cls: ServiceClass;
  /** Its client's host. */
  readonly clientHost: string;
  clientGone(): boolean;
  /** Waiting for a slot (the client leaving then cancels the wait). */
  setWaiting(waiting: boolean): void;
  /** A slot on this replica is held now (release() gives it back). */
  admitted(replica: string): void;
  release(): void;
}

/** A connection to the replica with the startup packet sent: its first answer, or why none. */
export type DialResult<L> = { ok: true; leg: L } | { ok: false; err: unknown; retry?: boolean; leg?: L };

/** How a session connects to a replica (`attempt` 0 is the first). */
export interface Dialer<L> {
  /** Connects and sends the startup packet; `answered` once, with the first answer or why none. */
  dial(target: SessionTarget, attempt: number, answered: (r: DialResult<L>) => void): void;
  /** A leg not used (its answer failed, or its client left meanwhile): closed. */
  drop(leg: L | undefined): void;
}

export type RouteResult<L> =
  | { kind: 'attached'; target: SessionTarget; leg: L }
  | { kind: 'refused'; code: string; message: string }
  /** The client left meanwhile: nothing held, nothing to tell. */
  | { kind: 'gone' }
  /** Not expected (a bug): the session is refused as an internal error. */
  | { kind: 'error'; err: unknown };

/**
 * Routes a session; `done` once with the result. `first`: the first attempt's replica when it was
 * taken already (an early connection's). Callbacks, not promises: a session admitted at once and
 * answered at the first try (the usual case) makes none.
 */
export function routeSession<L>(
  steps: RouteSteps,
  dialer: Dialer<L>,
  done: (r: RouteResult<L>) => void,
  first?: SessionTarget,
): void {
  new Route(steps, dialer, done, first).next();
}

class Route<L> {
  private attempt = 0;
  private lastError: unknown;
  private lastReplica: string | undefined;

  constructor(
    private readonly steps: RouteSteps,
    private readonly dialer: Dialer<L>,
    private readonly done: (r: RouteResult<L>) => void,
    private readonly first: SessionTarget | undefined,
  ) {}

  next(): void {
    const { host, cls } = this.steps;
    if (this.attempt >= host.connectAttempts) return this.failed();
    if (this.attempt === 0 && this.first) return this.go(this.first);
    let got: SessionTarget | Promise<SessionTarget>;
    this.steps.setWaiting(true);
    try {
      got = host.acquire(cls, this.steps, this.steps.clientHost);
    } catch (err) {
      this.steps.setWaiting(false);
      return this.unadmitted(err);
    }
    // Admitted at once (the usual case): no promise to wait on.
    if (!(got instanceof Promise)) {
      this.steps.setWaiting(false);
      return this.go(got);
    }
    got.then(
      (target) => {
        this.steps.setWaiting(false);
        this.go(target);
      },
      (err: unknown) => {
        this.steps.setWaiting(false);
        this.unadmitted(err);
      },
    );
  }

  private unadmitted(err: unknown): void {
    const { steps } = this;
    const counters = steps.host.stats.classes[steps.cls];
    if (steps.clientGone()) return this.done({ kind: 'gone' });
    if (isPlbError(err, 'ADMISSION_FULL') || isPlbError(err, 'ADMISSION_TIMEOUT')) {
      counters.refused += 1;
      return this.done({ kind: 'refused', code: '53300', message: `plb proxy: ${err.message}` });
    }
    if (!isPlbError(err, 'NO_REPLICA')) return this.done({ kind: 'error', err });
    if (this.lastError === undefined) {
      counters.refused += 1;
      return this.done({
        kind: 'refused',
        code: '57P03',
        message: steps.host.noServer?.(steps.cls) ?? `no replica available for class ${steps.cls}`,
      });
    }
    this.failed();
  }

  private go(target: SessionTarget): void {
    this.steps.admitted(target.replica);
    this.lastReplica = target.replica;
    let told = false;
    const answered = (a: DialResult<L>): void => {
      if (told) return;
      told = true;
      this.answered(target, a);
    };
    try {
      this.dialer.dial(target, this.attempt, answered);
    } catch (err) {
      answered({ ok: false, err, retry: true });
    }
  }

  private answered(target: SessionTarget, answer: DialResult<L>): void {
    const { steps } = this;
    if (steps.clientGone()) {
      this.dialer.drop(answer.leg);
      steps.release();
      return this.done({ kind: 'gone' });
    }
    if (!answer.ok) {
      this.dialer.drop(answer.leg);
      steps.release();
      steps.host.reportFailure(target.replica, answer.err, 'connect');
      this.lastError = answer.err;
      this.attempt += 1;
      return answer.retry ? this.next() : this.failed();
    }
    steps.host.stats.classes[steps.cls].opened += 1;
    steps.host.stats.replica(target.replica).opened += 1;
    this.done({ kind: 'attached', target, leg: answer.leg });
  }

  private failed(): void {
    const { steps, lastError } = this;
    steps.host.stats.classes[steps.cls].startupFailed += 1;
    if (this.lastReplica !== undefined) steps.host.stats.replica(this.lastReplica).failed += 1;
    this.done({
      kind: 'refused',
      code: '08006',
      message: `could not connect to a ${steps.host.serverNoun ?? 'replica'} for class ${steps.cls}: ${lastError instanceof Error ? lastError.message : String(lastError)}`,
    });
  }
}

/** The server's first message is a FATAL of a server going away (shutdown, crash): try elsewhere. */
export function dyingServerError(chunk: Buffer): Error | undefined {
  if (chunk[0] !== MSG_ERROR || chunk.length < 5 || chunk.length < 1 + chunk.readInt32BE(1)) return undefined;
  const e = decodeServerError(chunk.subarray(0, 1 + chunk.readInt32BE(1)));
  const err = Object.assign(new Error(e.message), { code: e.code, severity: e.severity });
  return isDeathEvidence(classifyFailure(err)) ? err : undefined;
}

/** A connect that took too long (tried again elsewhere, as a refused connect). */
export function connectTimeout(host: string, port: number, ms: number): Error {
  return Object.assign(new Error(`connect to ${host}:${port} timed out after ${ms} ms`), {
    code: 'ETIMEDOUT',
  });
}

/** A server that was connected but did not answer the startup packet in time (not tried again). */
export function answerTimeout(ms: number): Error {
  return Object.assign(new Error(`no answer to the startup packet within ${ms} ms`), { code: 'ETIMEDOUT' });
}
