/**
 * The session core (session-core.ts) over a recording transport, without sockets: what it asks
 * the transport to close and say at each ending, its counters, and that its slot is given back
 * exactly once whatever the order of endings.
 */
import { afterEach, describe, expect, it, vi } from 'vitest';
import { CancelKeys } from '../../src/proxy/protocol/cancel-keys.js';
import { SessionCore } from '../../src/proxy/session/session-core.js';
import type { ClientSession, SessionHost, SessionTarget } from '../../src/proxy/session/session-host.js';
import type { Dialer } from '../../src/proxy/session/session-route.js';
import type {
  BackendClose,
  ClientClose,
  SessionTransport,
} from '../../src/proxy/session/session-transport.js';
import { ProxyStats } from '../../src/proxy/stats.js';
import { HostShare } from '../../src/proxy/admission/host-share.js';

const TARGET: SessionTarget = { replica: 'r1', host: '127.0.0.1', port: 1 };

/** The SQLSTATE of an ErrorResponse ('C' field). */
function sqlstate(msg: Buffer | undefined): string | undefined {
  return msg?.toString('latin1').match(/\0C([0-9A-Z]{5})\0/)?.[1];
}

class Recorder implements SessionTransport<string> {
  readonly calls: [string, ...unknown[]][] = [];
  /** The dial's answer: 'ok' attaches at once; 'wait' keeps it for later. */
  answer: 'ok' | 'wait' = 'ok';
  pending: ((ok: boolean) => void) | undefined;

  dialer(): { dialer: Dialer<string> } {
    return {
      dialer: {
        dial: (_t, _a, answered) => {
          const go = (ok: boolean): void =>
            answered(ok ? { ok: true, leg: 'leg' } : { ok: false, err: undefined });
          if (this.answer === 'ok') go(true);
          else this.pending = go;
        },
        drop: (leg) => void this.calls.push(['drop', leg]),
      },
    };
  }
  attach(target: SessionTarget, leg: string): void {
    this.calls.push(['attach', target.replica, leg]);
  }
  refuse(last: Buffer | undefined): void {
    this.calls.push(['refuse', sqlstate(last)]);
  }
  close(client: ClientClose | undefined, backend: BackendClose | undefined, last?: Buffer): void {
    this.calls.push(['close', client, backend, sqlstate(last)]);
  }
  forgetKey(): void {
    this.calls.push(['forgetKey']);
  }
  over(): void {
    this.calls.push(['over']);
  }
}

function rig(answer: 'ok' | 'wait' = 'ok') {
  const released: string[] = [];
  const failures: string[] = [];
  const ended: ClientSession[] = [];
  const stats = new ProxyStats(['r1']);
  const host: SessionHost = {
    classFrom: 'off',
    startupTimeoutMs: 1000,
    connectTimeoutMs: 1000,
    connectAttempts: 1,
    cancelKeys: new CancelKeys(),
    stats,
    serverTls: 'disable',
    acquire: () => TARGET,
    cancelWait: () => undefined,
    release: (replica) => void released.push(replica),
    reportFailure: (replica) => void failures.push(replica),
    log: () => undefined,
  };
  const t = new Recorder();
  t.answer = answer;
  const core = new SessionCore(t, host, 'premium', (s) => void ended.push(s));
  return { core, t, stats, released, failures, ended };
}

describe('the session core', () => {
  it('routes a startup to backend-startup, then ready; the backend ending cleanly after Terminate ends the client', () => {
    const { core, t, stats, released } = rig();
    core.startup({ user: 'u' });
    expect(core.phase).toBe('backend-startup');
    expect(t.calls).toEqual([['attach', 'r1', 'leg']]);
    expect(core.ready()).toBe(true);
    expect(core.ready()).toBe(false);
    expect(stats.classes.premium).toMatchObject({ opened: 1, ready: 1 });
    core.terminating();
    core.backendEnded({ lastType: 0x5a, atBoundary: true }, undefined, undefined);
    expect(t.calls.slice(1)).toEqual([['forgetKey'], ['close', 'end', undefined, undefined]]);
    expect(released).toEqual(['r1']);
    expect(stats.classes.premium).toMatchObject({ closed: 1, lost: 0 });
  });

  it('a replica that went away: the client told 08006 at a boundary, counted lost, reported', () => {
    const { core, t, stats, released, failures } = rig();
    core.startup({});
    core.ready();
    core.backendEnded({ lastType: 0x5a, atBoundary: true }, undefined, undefined);
    expect(t.calls.at(-1)).toEqual(['close', 'end', undefined, '08006']);
    expect(stats.classes.premium.lost).toBe(1);
    expect(failures).toEqual(['r1']);
    core.clientClosed();
    core.finish();
    expect(released).toEqual(['r1']);
  });

  it('replicaDown and shutdown tell once; the slot is given back once', () => {
    const { core, t, released, ended } = rig();
    core.startup({});
    core.replicaDown('hung');
    expect(t.calls.at(-1)).toEqual(['close', 'at-boundary', 'destroy', '08006']);
    core.replicaDown('hung');
    core.shutdown();
    expect(t.calls.at(-1)).toEqual(['close', 'destroy', 'end', undefined]);
    core.clientClosed();
    core.finish();
    core.finish();
    expect(released).toEqual(['r1']);
    expect(ended).toEqual([core]);
  });

  it('a shutdown while routing: told 57P01; the connection answered afterwards is dropped', () => {
    const { core, t } = rig('wait');
    core.startup({});
    core.shutdown();
    expect(t.calls).toEqual([['close', 'at-boundary', 'end', '57P01']]);
    t.pending?.(true);
    expect(t.calls.slice(1)).toEqual([
      ['drop', 'leg'],
      ['close', 'destroy', 'destroy', undefined],
    ]);
  });

  it('a failed transport: the client told XX000, the backend dropped; nothing after the end', () => {
    const { core, t, released } = rig();
    core.startup({});
    core.transportFailed('relay: out of memory');
    expect(t.calls.at(-1)).toEqual(['close', 'at-boundary', 'destroy', 'XX000']);
    expect(released).toEqual(['r1']);
    core.finish();
    const n = t.calls.length;
    core.transportFailed('again');
    expect(t.calls).toHaveLength(n);
  });

  describe('--startup-timeout from the slot to ReadyForQuery', () => {
    afterEach(() => void vi.useRealTimers());

    it('a slot held that long unauthenticated: told 57014, the backend dropped, the slot given back once, counted', () => {
      vi.useFakeTimers();
      for (const answer of ['ok', 'wait'] as const) {
        const { core, t, released, stats } = rig(answer);
        core.startup({});
        vi.advanceTimersByTime(999);
        expect(released).toEqual([]);
        vi.advanceTimersByTime(1);
        expect(t.calls.at(-1)).toEqual(['close', 'at-boundary', 'destroy', '57014']);
        expect(released).toEqual(['r1']);
        expect(stats.startupTimeouts).toBe(1);
        // Still connecting: the connection answered afterwards is dropped.
        t.pending?.(true);
        core.backendEnded({ lastType: 0, atBoundary: true }, undefined, undefined);
        core.finish();
        expect(released).toEqual(['r1']);
      }
    });

    it('--startup-yield: another host waiting cuts it as the timeout does (57014, counted); never an established one', () => {
      vi.useFakeTimers();
      const share = new HostShare(500, () => Date.now());
      const a = rig('wait');
      const flood = new SessionCore(a.t, { ...a.core.host, share }, 'premium', () => undefined, '127.0.0.2');
      flood.startup({});
      const b = rig();
      const est = new SessionCore(b.t, { ...b.core.host, share }, 'premium', () => undefined, '127.0.0.3');
      est.startup({});
      est.ready();
      vi.advanceTimersByTime(600);
      share.contended('premium', '127.0.0.1', {});
      expect(a.t.calls.at(-1)).toEqual(['close', 'at-boundary', 'destroy', '57014']);
      expect(a.released).toEqual(['r1']);
      expect([a.stats.startupYields, a.stats.startupTimeouts]).toEqual([1, 0]);
      expect(b.t.calls.some((c) => c[3] === '57014')).toBe(false);
      expect(b.stats.startupYields).toBe(0);
      expect(share.counts('premium').held).toBe(0);
      // Its own timeout comes to nothing now; the connection answered afterwards is dropped.
      vi.advanceTimersByTime(1000);
      expect(a.stats.startupTimeouts).toBe(0);
      a.t.pending?.(true);
      flood.finish();
      expect(a.released).toEqual(['r1']);
      share.close();
    });

    it('ReadyForQuery in time, or a closed client: no timeout', () => {
      vi.useFakeTimers();
      const { core, t, stats } = rig();
      core.startup({});
      core.ready();
      const gone = rig();
      gone.core.startup({});
      gone.core.clientClosed();
      vi.advanceTimersByTime(5000);
      expect(t.calls.some((c) => c[3] === '57014')).toBe(false);
      expect(gone.t.calls.some((c) => c[3] === '57014')).toBe(false);
      expect(stats.startupTimeouts + gone.stats.startupTimeouts).toBe(0);
    });
  });

  it('a bad class is refused 22023 before any route; a client gone before its answer ends it', () => {
    const { core, t } = rig();
    const named = new SessionCore(t, { ...core.host, classFrom: 'option' }, 'premium', () => undefined);
    named.startup({ options: '-c plb.class=gold' });
    expect(t.calls).toEqual([['refuse', '22023']]);
    const w = rig('wait');
    w.core.startup({});
    w.core.clientClosed();
    expect(w.released).toEqual(['r1']);
    w.t.pending?.(true);
    expect(w.t.calls.at(-1)).toEqual(['close', 'destroy', 'destroy', undefined]);
  });
});
