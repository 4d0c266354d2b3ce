// The `hold=dwell` reading of borrowing: hysteresis in time on top of the thresholds' band.
import type { ServiceClass } from '../core/service-class.js';

/**
 * How long a borrow (or return) condition must hold before the router acts on it. Two health
 * intervals (the default interval is 1 s): longer than the burst of admissions a closed client
 * population makes when a replica's sessions end together, short against a phase (15 s and more).
 */
export const BORROW_DWELL_MS = 2000;

type Kind = 'borrow' | 'return';

/**
 * When each class's borrow and return conditions started holding. A condition is seen only at
 * admissions (the router has no timers): it passes once it has held at every admission of the
 * class for dwellMs, then starts over; one admission that sees it false resets it. Pure: the time
 * is passed in.
 */
export class BorrowDwell {
  private readonly since: Record<Kind, Record<ServiceClass, number | undefined>> = {
    borrow: { premium: undefined, freemium: undefined },
    return: { premium: undefined, freemium: undefined },
  };

  constructor(readonly dwellMs = BORROW_DWELL_MS) {}

  /** `holds` at nowMs: true when it has held long enough (the caller then acts), else false. */
  pass(kind: Kind, cls: ServiceClass, holds: boolean, nowMs: number): boolean {
    const s = this.since[kind];
    if (!holds) {
      s[cls] = undefined;
      return false;
    }
    const from = s[cls] ?? nowMs;
    if (nowMs - from >= this.dwellMs) {
      s[cls] = undefined;
      return true;
    }
    s[cls] = from;
    return false;
  }
}
