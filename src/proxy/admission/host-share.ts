/**
 * Fairness between client hosts for the slots held before authentication (--startup-yield).
 * Before ReadyForQuery nothing tells a flood's startup (a broken pool, a retry storm: sockets that
 * never answer the password request) from a real client's, except the host it comes from. So when
 * a session of class C from host H has to wait for a slot, and another host G holds slots of C with
 * sessions still authenticating, G's oldest such session that has held its slot --startup-yield
 * long is cut as --startup-timeout cuts it (57014, the slot freed at once); the admission queue
 * then gives H its turn (router/admission/admission-queue.ts). G is the host holding the most of them (ties:
 * the oldest session), and only if it holds more than H does: the flood's own waiters never cut a
 * real client's slow authentication. One cut per waiting session of another host; never an
 * established session, never the waiting host's own. With one client host nothing ever yields.
 */
import type { ServiceClass } from '../../core/service-class.js';

/** --startup-yield's default. */
export const DEFAULT_STARTUP_YIELD_MS = 500;

/** A session holding a slot before ReadyForQuery, as this registry may cut it (session-core.ts). */
export interface Yielder {
  /** Cut it now (57014, backend dropped, slot released): false when it could not be (past it). */
  yieldSlot(): boolean;
}

interface Place {
  cls: ServiceClass;
  host: string;
}

/** A client's host as the admission queue and this registry key it: an IPv4 address, not its IPv6-mapped form. */
export function hostKey(address: string | undefined): string {
  if (address === undefined) return '';
  return address.startsWith('::ffff:') && address.includes('.') ? address.slice(7) : address;
}

/** The words a cut session's client is told. */
export function yieldMessage(yieldMs: number): string {
  return `canceling authentication: another client host is waiting for a slot (plb proxy --startup-yield ${yieldMs / 1000}s)`;
}

export class HostShare {
  /** Per class, per host: its sessions before ReadyForQuery holding slots, oldest first, since when. */
  private readonly held: Record<ServiceClass, Map<string, Map<Yielder, number>>> = {
    premium: new Map(),
    freemium: new Map(),
  };
  private readonly heldAt = new Map<Yielder, Place>();
  /** Per class, per host: its waiting sessions that have not had their cut, oldest first. */
  private readonly waits: Record<ServiceClass, Map<string, Set<object>>> = {
    premium: new Map(),
    freemium: new Map(),
  };
  private readonly waitAt = new Map<object, Place>();
  private timer: { at: number; t: NodeJS.Timeout } | undefined;
  private checking = false;

  constructor(
    /** How long a slot is held before it may be cut (> 0). */
    readonly yieldMs: number,
    private readonly now: () => number = () => performance.now(),
  ) {}

  /** s (of cls, from host) holds a slot and has not reached ReadyForQuery. */
  hold(s: Yielder, cls: ServiceClass, host: string): void {
    if (this.heldAt.has(s)) return;
    this.heldAt.set(s, { cls, host });
    let mine = this.held[cls].get(host);
    if (!mine) this.held[cls].set(host, (mine = new Map()));
    mine.set(s, this.now());
    // Another host waits: this one may have to yield once it is old enough.
    const waiting = this.waits[cls];
    if (waiting.size > 1 || (waiting.size === 1 && !waiting.has(host))) this.check(cls);
  }

  /** s reached ReadyForQuery or gave its slot back (no-op when not held). */
  drop(s: Yielder): void {
    const at = this.heldAt.get(s);
    if (!at) return;
    this.heldAt.delete(s);
    const mine = this.held[at.cls].get(at.host) as Map<Yielder, number>;
    mine.delete(s);
    if (mine.size === 0) this.held[at.cls].delete(at.host);
  }

  /** A session (ticket) of cls from host waits for a slot: another host's may yield for it. */
  contended(cls: ServiceClass, host: string, ticket: object): void {
    if (this.waitAt.has(ticket)) return;
    this.waitAt.set(ticket, { cls, host });
    let mine = this.waits[cls].get(host);
    if (!mine) this.waits[cls].set(host, (mine = new Set()));
    mine.add(ticket);
    this.check(cls);
  }

  /** What the gate answered a session's acquire: when it has to wait, told as contended until it ends. */
  watch<T>(cls: ServiceClass, host: string, ticket: object, got: T | Promise<T>): T | Promise<T> {
    if (!(got instanceof Promise)) return got;
    this.contended(cls, host, ticket);
    return got.then(
      (v) => (this.waitEnded(ticket), v),
      (err: unknown) => {
        this.waitEnded(ticket);
        throw err;
      },
    );
  }

  /** ticket waits no more (a slot, a timeout, its client gone); no-op when it had its cut already. */
  waitEnded(ticket: object): void {
    const at = this.waitAt.get(ticket);
    if (!at) return;
    this.waitAt.delete(ticket);
    const mine = this.waits[at.cls].get(at.host) as Set<object>;
    mine.delete(ticket);
    if (mine.size === 0) this.waits[at.cls].delete(at.host);
  }

  /** Sessions held / waiting now (tests, the admin view). */
  counts(cls: ServiceClass): { held: number; waiting: number } {
    let held = 0;
    let waiting = 0;
    for (const m of this.held[cls].values()) held += m.size;
    for (const w of this.waits[cls].values()) waiting += w.size;
    return { held, waiting };
  }

  /** Stops the timer (the proxy stops). */
  close(): void {
    if (this.timer) clearTimeout(this.timer.t);
    this.timer = undefined;
  }

  /** Cuts what is due in cls for its waiters; a timer for when the next one will be. */
  private check(cls: ServiceClass): void {
    // A cut releases a slot: nothing here is re-entered through it, but be sure.
    if (this.checking) return;
    this.checking = true;
    let due: number | undefined;
    try {
      for (const [host, tickets] of this.waits[cls]) {
        while (tickets.size > 0) {
          const v = this.victim(cls, host);
          if (!v) break;
          const at = v.since + this.yieldMs;
          if (this.now() < at) {
            due = due === undefined ? at : Math.min(due, at);
            break;
          }
          const cut = v.s.yieldSlot();
          this.drop(v.s);
          if (cut) this.waitEnded(tickets.values().next().value as object);
        }
      }
    } finally {
      this.checking = false;
    }
    if (due !== undefined) this.wakeAt(due);
  }

  /**
   * The host other than `waiter` holding the most slots before ReadyForQuery in cls (ties: the
   * oldest), its oldest; none unless it holds more of them than `waiter` does.
   */
  private victim(cls: ServiceClass, waiter: string): { s: Yielder; since: number } | undefined {
    let best: { s: Yielder; since: number; n: number } | undefined;
    for (const [host, mine] of this.held[cls]) {
      if (host === waiter) continue;
      const [s, since] = mine.entries().next().value as [Yielder, number];
      if (!best || mine.size > best.n || (mine.size === best.n && since < best.since))
        best = { s, since, n: mine.size };
    }
    return best && best.n > (this.held[cls].get(waiter)?.size ?? 0) ? best : undefined;
  }

  /** One timer: at the earliest time a cut may be due. */
  private wakeAt(at: number): void {
    if (this.timer && this.timer.at <= at) return;
    if (this.timer) clearTimeout(this.timer.t);
    const t = setTimeout(
      () => {
        this.timer = undefined;
        this.check('premium');
        this.check('freemium');
      },
      Math.max(1, at - this.now()),
    );
    t.unref();
    this.timer = { at, t };
  }
}
