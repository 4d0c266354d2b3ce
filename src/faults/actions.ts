import type { FaultAction } from './types.js';

/** Name of the reference phase, the window just before the first fault. */
export const REF_PHASE = 'ref';

/** How an event changes K+ (the number of healthy replicas): down/stop/pause -1, rejoin/unpause +1. */
export function survivorDelta(action: FaultAction): -1 | 0 | 1 {
  switch (action) {
    case 'down':
    case 'stop':
    case 'pause':
      return -1;
    case 'rejoin':
    case 'unpause':
      return 1;
    case 'throttle':
      return 0;
  }
}

/** K+ after an event, given K+ before it. */
export function survivorsAfterEvent(survivors: number, action: FaultAction): number {
  return survivors + survivorDelta(action);
}

/** Phase name after the `count`-th event of this action (1-based): `down-1`, `rejoin-2`, ... */
export function phaseNameFor(action: FaultAction, count: number): string {
  return `${action}-${count}`;
}

/** Whether the replica is down or up after this action (throttle leaves it as it was). */
export function replicaStateAfter(action: FaultAction): 'down' | 'up' | null {
  const d = survivorDelta(action);
  return d < 0 ? 'down' : d > 0 ? 'up' : null;
}
