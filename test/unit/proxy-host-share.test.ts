import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { HostShare, hostKey, type Yielder } from '../../src/proxy/admission/host-share.js';
import { parseProxyConfigFile } from '../../src/proxy/config-file.js';
import { parseLimitFlags } from '../../src/proxy/admission/limit-options.js';

/** A session holding a slot before ReadyForQuery: cut once (as session-core drops it then). */
class Held implements Yielder {
  cut = false;
  constructor(
    readonly name: string,
    private readonly share: HostShare,
    /** false: it is past authentication by the time it is asked (it cannot be cut). */
    private readonly cuttable = true,
  ) {}
  yieldSlot(): boolean {
    if (!this.cuttable || this.cut) return false;
    this.cut = true;
    this.share.drop(this);
    return true;
  }
}

describe('HostShare (--startup-yield)', () => {
  let now = 0;
  let share: HostShare;
  const hold = (
    name: string,
    host: string,
    cls: 'premium' | 'freemium' = 'premium',
    cuttable = true,
  ): Held => {
    const h = new Held(name, share, cuttable);
    share.hold(h, cls, host);
    return h;
  };
  const advance = (ms: number): void => {
    now += ms;
    vi.advanceTimersByTime(ms);
  };

  beforeEach(() => {
    vi.useFakeTimers();
    now = 0;
    share = new HostShare(500, () => now);
  });
  afterEach(() => {
    share.close();
    vi.useRealTimers();
  });

  it('cuts the oldest session of the host holding the most unauthenticated slots, once per waiter', () => {
    const a = [hold('a0', 'A'), hold('a1', 'A'), hold('a2', 'A')];
    advance(10);
    const b0 = hold('b0', 'B');
    advance(1000);
    share.contended('premium', 'C', { waiter: 1 });
    expect(a.map((h) => h.cut)).toEqual([true, false, false]);
    expect(b0.cut).toBe(false);
    expect(share.counts('premium')).toEqual({ held: 3, waiting: 0 });
    // the same waiter again: no second cut
    advance(1000);
    expect(a.filter((h) => h.cut)).toHaveLength(1);
  });

  it('ties go to the host whose session is the oldest', () => {
    const b0 = hold('b0', 'B');
    advance(5);
    const a0 = hold('a0', 'A');
    advance(600);
    share.contended('premium', 'C', {});
    expect([b0.cut, a0.cut]).toEqual([true, false]);
  });

  it('never cuts the waiting host’s own sessions, nor another class’s', () => {
    const mine = [hold('c0', 'C'), hold('c1', 'C')];
    const other = hold('f0', 'F', 'freemium');
    advance(5000);
    share.contended('premium', 'C', {});
    advance(5000);
    expect(mine.some((h) => h.cut)).toBe(false);
    expect(other.cut).toBe(false);
    expect(share.counts('premium').waiting).toBe(1);
  });

  it('takes only from a host holding more such slots than the waiting host: a flood’s waiters never cut a client', () => {
    const flood = [hold('a0', 'A'), hold('a1', 'A'), hold('a2', 'A')];
    const client = hold('c0', 'C');
    advance(5000);
    for (let i = 0; i < 10; i++) share.contended('premium', 'A', { i });
    advance(5000);
    expect(client.cut).toBe(false);
    expect(flood.some((h) => h.cut)).toBe(false);
    // Two hosts with as many: neither takes from the other.
    const b = [hold('b0', 'B'), hold('b1', 'B'), hold('b2', 'B')];
    advance(1000);
    share.contended('premium', 'B', {});
    expect(flood.some((h) => h.cut) || b.some((h) => h.cut)).toBe(false);
  });

  it('never cuts an established session (dropped at ReadyForQuery)', () => {
    const a0 = hold('a0', 'A');
    advance(100);
    share.drop(a0); // ReadyForQuery
    advance(1000);
    share.contended('premium', 'C', {});
    expect(a0.cut).toBe(false);
  });

  it('waits until the victim’s oldest session has held its slot --startup-yield long (one timer)', () => {
    const a0 = hold('a0', 'A');
    advance(200);
    share.contended('premium', 'C', { w: 1 });
    expect(a0.cut).toBe(false);
    expect(vi.getTimerCount()).toBe(1);
    advance(299);
    expect(a0.cut).toBe(false);
    advance(1);
    expect(a0.cut).toBe(true);
    expect(vi.getTimerCount()).toBe(0);
  });

  it('at most one cut per waiting session of another host', () => {
    const flood = Array.from({ length: 10 }, (_, i) => hold(`a${i}`, 'A'));
    advance(600);
    const w1 = {};
    const w2 = {};
    share.contended('premium', 'C', w1);
    share.contended('premium', 'D', w2);
    advance(5000);
    expect(flood.filter((h) => h.cut).map((h) => h.name)).toEqual(['a0', 'a1']);
  });

  it('a waiter served (or gone) before the victim is old enough causes no cut', () => {
    const a0 = hold('a0', 'A');
    const w = {};
    share.contended('premium', 'C', w);
    advance(100);
    share.waitEnded(w);
    advance(5000);
    expect(a0.cut).toBe(false);
  });

  it('a session that can no longer be cut is skipped for the next one', () => {
    hold('a0', 'A', 'premium', false);
    advance(10);
    const a1 = hold('a1', 'A');
    advance(600);
    share.contended('premium', 'C', {});
    expect(a1.cut).toBe(true);
  });

  it('a slot taken after the wait began yields too, once old enough', () => {
    share.contended('premium', 'C', {});
    const a0 = hold('a0', 'A');
    advance(499);
    expect(a0.cut).toBe(false);
    advance(1);
    expect(a0.cut).toBe(true);
  });

  it('watch: told contended only when the gate answered with a promise, and done when it settles', async () => {
    hold('c0', 'C'); // the waiter's own: never cut
    expect(share.watch('premium', 'C', {}, 'r1')).toBe('r1');
    expect(share.counts('premium').waiting).toBe(0);
    let resolve: (v: string) => void = () => undefined;
    const got = share.watch('premium', 'C', {}, new Promise<string>((r) => (resolve = r)));
    expect(share.counts('premium').waiting).toBe(1);
    resolve('r2');
    await expect(got).resolves.toBe('r2');
    expect(share.counts('premium').waiting).toBe(0);
    const failed = share.watch('premium', 'C', {}, Promise.reject(new Error('timeout')));
    await expect(failed).rejects.toThrow('timeout');
    expect(share.counts('premium').waiting).toBe(0);
  });

  it('hostKey: an IPv4 address, not its IPv6-mapped form', () => {
    expect(hostKey('::ffff:127.0.0.2')).toBe('127.0.0.2');
    expect(hostKey('127.0.0.1')).toBe('127.0.0.1');
    expect(hostKey('::1')).toBe('::1');
    expect(hostKey(undefined)).toBe('');
  });

  it('--startup-yield: 500ms by default, a duration, 0 or off (never)', () => {
    const yieldOf = (v?: string): number =>
      parseLimitFlags(v === undefined ? {} : { 'startup-yield': v }, 'plb').startupYieldMs;
    expect([yieldOf(), yieldOf('2s'), yieldOf('0'), yieldOf('off')]).toEqual([500, 2000, 0, 0]);
    expect(() => yieldOf('soon')).toThrow(
      /^--startup-yield: expected a duration like 500ms, 0 or off \(got "soon"\)$/,
    );
  });

  it('the config file takes startup-yield as the flag does, a bad value at its line', async () => {
    const f = await parseProxyConfigFile('startup-timeout: 5s\nstartup-yield: off\n', '/x/p.yaml');
    expect(f.values['startup-yield']).toBe('off');
    await expect(parseProxyConfigFile('startup-yield: soon\n', '/x/p.yaml')).rejects.toThrow(
      'p.yaml:1: startup-yield: expected a duration like 500ms, 0 or off (got "soon")',
    );
  });
});
