// A fake driver's `faults`: the first actions through its operations (as every driver does), any
// later one recorded as `<action> <replica>`, so a fake needs no edit when an action is added.
import { faultsByOperation, type ClusterDriver, type FaultMethods } from '../../src/cluster/driver.js';
import { FAULT_ACTIONS } from '../../src/run-format/fault-actions.js';

type Operations = Parameters<typeof faultsByOperation>[0];

function fakeFaults(d: Operations, calls: string[]): FaultMethods {
  const recorded = Object.fromEntries(
    FAULT_ACTIONS.map((a) => [a, async (id: string) => void calls.push(`${a} ${id}`)]),
  ) as unknown as FaultMethods;
  return { ...recorded, ...faultsByOperation(d) };
}

/** A fake driver object with its `faults` made from its own operations. */
export function withFakeFaults(d: Omit<ClusterDriver, 'faults'>, calls: string[] = []): ClusterDriver {
  return { ...d, faults: fakeFaults(d, calls) };
}
