import { realClock, type Cancel, type Clock } from '../clock/index.js';
import type { Connector, DbConnection } from './connector.js';
import {
  cannotConnectNow,
  classifyFailure,
  endsOnlyASession,
  isDeathEvidence,
  type FailureCause,
  type FailureVia,
} from '../core/failure-cause.js';
import type { HealthOptions } from '../run-format/config.js';

/**
 * Defaults: HAProxy's are inter 2s fall 3 rise 2; demo phases are 15 s long, so we check every
 * second with fall 2 / rise 2: a dead replica is seen within ~2 s (sooner when sessions report
 * connection errors, which count as death evidence), a flapping one needs two good checks back.
 * A silent replica is taken for dead after 5 s without an answer.
 */
export const DEFAULT_HEALTH: HealthOptions = {
  intervalMs: 1000,
  timeoutMs: 1000,
  fall: 2,
  rise: 2,
  hangMs: 5000,
};

export type HealthState = 'up' | 'down';

/** Pure fall/rise bookkeeping: feed it observations, it says when a replica changes state. */
export class HealthTracker {
  private readonly state = new Map<string, { healthy: boolean; ok: number; bad: number }>();

  constructor(
    ids: readonly string[],
    private readonly fall: number,
    private readonly rise: number,
  ) {
    for (const id of ids) this.state.set(id, { healthy: true, ok: 0, bad: 0 });
  }

  isHealthy(id: string): boolean {
    return this.state.get(id)?.healthy ?? false;
  }

  /** A replica added at run time: down until `rise` checks in a row pass. */
  add(id: string): void {
    if (!this.state.has(id)) this.state.set(id, { healthy: false, ok: 0, bad: 0 });
  }

  /** Returns the new state when this observation changes it, else null. */
  observe(id: string, ok: boolean): HealthState | null {
    const s = this.state.get(id);
    if (!s) return null;
    if (ok) {
      s.ok += 1;
      s.bad = 0;
      if (!s.healthy && s.ok >= this.rise) {
        s.healthy = true;
        return 'up';
      }
    } else {
      s.bad += 1;
      s.ok = 0;
      if (s.healthy && s.bad >= this.fall) {
        s.healthy = false;
        return 'down';
      }
    }
    return null;
  }

  /** Sets a state directly (oracle mode), resetting the counters. */
  force(id: string, healthy: boolean): void {
    const s = this.state.get(id);
    if (s) Object.assign(s, { healthy, ok: 0, bad: 0 });
  }
}

export type HealthVia = FailureVia;

/** One classified failure the checker heard of (every one is recorded; only some count). */
export interface FailureReport {
  replica: string;
  cause: FailureCause;
  via: HealthVia;
  /** The error's message (or why the checker gave up waiting). */
  detail: string;
}

export interface HealthCheckerOptions extends HealthOptions {
  /** The run's clock (real unless simulated). */
  clock?: Clock;
}

interface CheckState {
  conn: DbConnection | undefined;
  /** When the check now in flight was sent (undefined: none in flight). */
  sentMs: number | undefined;
  /** Bumped when a client is dropped: results of older checks are ignored. */
  generation: number;
  slowReported: boolean;
  /** A session ended while a check was in flight: probe again once it is answered. */
  recheck: boolean;
  /** Sessions' ends waiting for the probe they asked for: reported once it answers (settleEnds). */
  ends: { via: HealthVia; detail: string }[];
}

/**
 * Active health checks over one persistent connection per replica (reconnecting after a
 * failure), plus passive reports from sessions. Every failure is classified (failure-cause.ts):
 * only `unreachable` counts toward fall (a session's end only through the probe it asks for,
 * endsOnlyASession); overloaded and slow are reported through onFailure but
 * never mark a replica down, and an answered check resets the count (the replica is up). A check
 * is never abandoned for being slow: the next one waits for it, so a busy replica is not
 * hammered with reconnects that would cost it more CPU.
 */
export class HealthChecker {
  private readonly tracker: HealthTracker;
  private readonly checks = new Map<string, CheckState>();
  /** Replicas added at run time (add), checked after those the checker was made with. */
  private readonly added: string[] = [];
  private cancelTick: Cancel | undefined;
  private running = false;
  private readonly clock: Clock;

  constructor(
    private readonly ids: readonly string[],
    private readonly connector: Connector,
    private readonly opts: HealthCheckerOptions,
    private readonly onChange: (replica: string, state: HealthState, via: HealthVia, cause: string) => void,
    private readonly onFailure: (report: FailureReport) => void = () => undefined,
  ) {
    this.tracker = new HealthTracker(ids, opts.fall, opts.rise);
    this.clock = opts.clock ?? realClock();
    for (const id of ids) this.checks.set(id, freshCheck());
  }

  start(): void {
    this.running = true;
    const tick = (): void => {
      if (!this.running) return;
      for (const id of this.ids) this.checkOne(id);
      for (const id of this.added) this.checkOne(id);
      this.cancelTick = this.clock.timer(this.opts.intervalMs, tick);
    };
    tick();
  }

  stop(): void {
    this.running = false;
    this.cancelTick?.();
    for (const id of this.checks.keys()) this.dropClient(id);
  }

  /**
   * A session or a connect attempt failed on this replica: classify it and count what counts. A
   * session's end (endsOnlyASession: 57P01 of pg_terminate_backend, a connection closed under a
   * session) counts only through the probe it asks for at once, and is reported when that probe
   * answers: `unreachable` if the server is gone, `other` if only the session ended.
   */
  reportFailure(replica: string, err: unknown, via: HealthVia): FailureCause {
    if (endsOnlyASession(err, via)) {
      const st = this.checks.get(replica);
      if (st && this.running) {
        st.ends.push({ via, detail: errorText(err) });
        this.confirm(replica);
      } else this.fail(replica, 'other', via, `session ended: ${errorText(err)}`);
      return 'other';
    }
    const cause = classifyFailure(err);
    this.fail(replica, cause, via, errorText(err));
    return cause;
  }

  /** Probes the replica now, or again as soon as the check in flight (sent perhaps before the event) is answered. */
  private confirm(id: string): void {
    const st = this.checks.get(id);
    if (!st || !this.running) return;
    if (st.sentMs === undefined) this.checkOne(id, true);
    else st.recheck = true;
  }

  isHealthy(replica: string): boolean {
    return this.tracker.isHealthy(replica);
  }

  /**
   * A replica added at run time (a proxy's reload): checked from the next tick on, taken for down
   * until `rise` checks in a row pass (onChange then says 'up'), as a replica coming back.
   */
  add(id: string): void {
    if (this.checks.has(id)) return;
    this.added.push(id);
    this.tracker.add(id);
    this.checks.set(id, freshCheck());
  }

  private fail(replica: string, cause: FailureCause, via: HealthVia, detail: string): void {
    if (!this.running) return;
    this.onFailure({ replica, cause, via, detail });
    if (!isDeathEvidence(cause)) return;
    const change = this.tracker.observe(replica, false);
    if (change) this.onChange(replica, change, via, `${cause}: ${detail}`);
  }

  private answered(replica: string): void {
    if (!this.running) return;
    const change = this.tracker.observe(replica, true);
    if (change) this.onChange(replica, change, 'health', 'answered');
  }

  /** confirming: asked for by a session's end (a 57P03 answer then says the server is going). */
  private checkOne(id: string, confirming = false): void {
    const st = this.checks.get(id);
    if (!st) return;
    if (st.sentMs !== undefined) {
      // The previous check is still unanswered: slow once, then silent past hangMs.
      const waited = this.clock.now() - st.sentMs;
      if (waited >= this.opts.timeoutMs && !st.slowReported) {
        st.slowReported = true;
        this.fail(id, 'slow', 'health', `health check unanswered after ${Math.round(waited)} ms`);
      }
      if (waited >= this.opts.hangMs) {
        this.settleEnds(id, st, true);
        this.fail(id, 'unreachable', 'health', `no answer for ${Math.round(waited)} ms`);
        // A socket that never closes (a vanished peer) must not block checks forever.
        if (waited >= 3 * this.opts.hangMs) this.dropClient(id);
      }
      return;
    }
    st.sentMs = this.clock.now();
    st.slowReported = false;
    st.recheck = false;
    const generation = st.generation;
    const again = (): void => {
      if (!st.recheck) return;
      st.recheck = false;
      this.checkOne(id, true);
    };
    this.probe(id, st).then(
      () => {
        if (st.generation !== generation) return;
        st.sentMs = undefined;
        if (confirming) this.settleEnds(id, st, false);
        this.answered(id);
        again();
      },
      (err: unknown) => {
        if (st.generation !== generation) return;
        st.sentMs = undefined;
        this.dropClient(id);
        // The server answered with an error (53300, 57P03...): alive, but not yet usable; right
        // after a session's end, a 57P03 (shutting down, recovering from a crash) says it is going.
        const gone = confirming && cannotConnectNow(err);
        const cause = gone ? 'unreachable' : classifyFailure(err);
        if (confirming) this.settleEnds(id, st, isDeathEvidence(cause));
        this.fail(id, cause, 'health', errorText(err));
        again();
      },
    );
  }

  private async probe(id: string, st: CheckState): Promise<void> {
    const kept = st.conn;
    if (kept) {
      try {
        return void (await kept.query('SELECT 1'));
      } catch {
        // Its backend alone may have been ended (pg_terminate_backend of every backend): only a
        // new connection says whether the server is gone.
        if (st.conn === kept) st.conn = undefined;
        void kept.end(0);
      }
    }
    st.conn = await this.connector.open(id, {
      connectTimeoutMs: this.opts.hangMs,
      applicationName: 'plb-health',
      // An idle connection's error must not crash the run; the next check sees the failure.
      onError: () => undefined,
    });
    await st.conn.query('SELECT 1');
  }

  /**
   * The sessions' ends a probe answered for: the server gone (unreachable) or alive (other, only
   * those sessions ended). Reported, not counted toward --fall: the probe's own answer counts.
   */
  private settleEnds(id: string, st: CheckState, gone: boolean): void {
    const ends = st.ends.splice(0);
    if (!this.running) return;
    for (const e of ends)
      this.onFailure({
        replica: id,
        cause: gone ? 'unreachable' : 'other',
        via: e.via,
        detail: `session ended, server ${gone ? 'gone' : 'alive'} at the probe: ${e.detail}`,
      });
  }

  private dropClient(id: string): void {
    const st = this.checks.get(id);
    if (!st) return;
    st.generation += 1;
    st.sentMs = undefined;
    const conn = st.conn;
    st.conn = undefined;
    // Not awaited: a vanished peer may never finish the goodbye.
    void conn?.end(0);
  }
}

function freshCheck(): CheckState {
  return { conn: undefined, sentMs: undefined, generation: 0, slowReported: false, recheck: false, ends: [] };
}

function errorText(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}
