/**
 * Bandwidth faults: htb as lo's root qdisc, a class per direction of a limited replica port (so a
 * link of `rate` each way, as a full-duplex link is) with a byte-limited fifo under it, and u32
 * filters on the port (and 127.0.0.1) that send the port's packets there; every other packet of
 * lo goes out unshaped (htb's `default 0`). tc has no comment to tag with: the root's handle is
 * derived from the cluster's id and recorded in the cluster's record before it is added, and plb
 * removes only a root qdisc with its own handle. A root another owner put there is refused.
 * A qdisc drop on lo is reported back to the sending TCP (it backs off, nothing is lost): right
 * for a rate limit.
 */
import { PlbError } from '../../core/errors.js';
import { run } from './exec.js';

export const TC_HINT = 'bandwidth faults need tc with htb and u32: `apt-get install iproute2`';
/** The fifo under a limited class holds this long at the rate, and at least two 64 KiB packets. */
const QUEUE_SECONDS = 0.1;
const MIN_QUEUE_BYTES = 128 * 1024;

/** The handle (hex major) of the root qdisc plb adds for a cluster: 100 to feff, from its id. */
export function qdiscHandle(clusterId: string): string {
  const n = Number.parseInt(clusterId.slice(0, 4), 16);
  return (0x100 + ((Number.isFinite(n) ? n : 0) % 0xfe00)).toString(16);
}

export interface RootQdisc {
  kind: string;
  /** The major in hex, `0` for a device's default. */
  handle: string;
}

/** lo's root qdisc from `tc qdisc show dev lo` (`qdisc noqueue 0: root refcnt 2`). */
export function parseRootQdisc(out: string): RootQdisc | null {
  for (const line of out.split('\n')) {
    const m = /^qdisc (\S+) ([0-9a-f]+): root\b/.exec(line.trim());
    if (m) return { kind: m[1] as string, handle: m[2] as string };
  }
  return null;
}

/** Whose lo's root qdisc is: nobody's (the default `noqueue`), this cluster's, or another's. */
export function rootOwner(root: RootQdisc | null, handle: string): 'none' | 'ours' | 'other' {
  if (root === null || root.kind === 'noqueue') return 'none';
  return root.kind === 'htb' && root.handle === handle ? 'ours' : 'other';
}

/** The minors of a port's two classes (toward it, from it); each is also its filter's priority. */
export function portMinors(port: number): { toPort: number; fromPort: number } {
  const toPort = (port % 32000) * 2 + 2;
  return { toPort, fromPort: toPort + 1 };
}

/** The tc commands that limit a port to `rate` bits/s each way under root `handle`. */
export function bandwidthCommands(handle: string, port: number, rate: number): string[][] {
  const bits = `${Math.round(rate)}bit`;
  const limit = String(Math.max(MIN_QUEUE_BYTES, Math.round((rate / 8) * QUEUE_SECONDS)));
  const { toPort, fromPort } = portMinors(port);
  const out: string[][] = [];
  for (const [minor, match] of [
    [toPort, ['match', 'ip', 'dst', '127.0.0.1/32', 'match', 'ip', 'dport', String(port), '0xffff']],
    [fromPort, ['match', 'ip', 'src', '127.0.0.1/32', 'match', 'ip', 'sport', String(port), '0xffff']],
  ] as const) {
    const cls = `${handle}:${minor.toString(16)}`;
    // quantum: fixed, as these classes borrow from none (htb warns on one derived from a tiny or huge rate).
    out.push(
      [
        'class',
        'add',
        'dev',
        'lo',
        'parent',
        `${handle}:`,
        'classid',
        cls,
        'htb',
        'rate',
        bits,
        'ceil',
        bits,
        'quantum',
        '65536',
      ],
      ['qdisc', 'add', 'dev', 'lo', 'parent', cls, 'bfifo', 'limit', limit],
      [
        'filter',
        'add',
        'dev',
        'lo',
        'parent',
        `${handle}:`,
        'protocol',
        'ip',
        'prio',
        String(minor),
        'u32',
        'match',
        'ip',
        'protocol',
        '6',
        '0xff',
        ...match,
        'flowid',
        cls,
      ],
    );
  }
  return out;
}

/** The tc commands that take a port's limit away (filters first: a class in use cannot go). */
export function bandwidthRemoval(handle: string, port: number): string[][] {
  const { toPort, fromPort } = portMinors(port);
  return [
    ...[toPort, fromPort].map((m) => [
      'filter',
      'del',
      'dev',
      'lo',
      'parent',
      `${handle}:`,
      'protocol',
      'ip',
      'prio',
      String(m),
      'u32',
    ]),
    ...[toPort, fromPort].map((m) => ['class', 'del', 'dev', 'lo', 'classid', `${handle}:${m.toString(16)}`]),
  ];
}

async function readRootQdisc(): Promise<RootQdisc | null> {
  const res = await run('tc', ['qdisc', 'show', 'dev', 'lo']);
  if (!res.ok) throw new PlbError('BAD_INPUT', `tc qdisc show dev lo failed: ${res.out}`, { hint: TC_HINT });
  return parseRootQdisc(res.out);
}

/** Why a root qdisc of another owner stops a bandwidth fault. */
function otherRootError(root: RootQdisc, handle: string): PlbError {
  return new PlbError(
    'BAD_INPUT',
    `bandwidth: lo's root qdisc is ${root.kind} ${root.handle}:, not plb's for this cluster (${handle}:); plb needs htb as lo's root and never replaces another's`,
    { hint: 'remove it (`tc qdisc del dev lo root`) if nothing needs it, or run without bandwidth faults' },
  );
}

/** Adds the cluster's htb root on lo, unless it is there; refuses another owner's. */
export async function ensureRoot(handle: string): Promise<void> {
  const root = await readRootQdisc();
  const owner = rootOwner(root, handle);
  if (owner === 'ours') return;
  if (owner === 'other' && root) throw otherRootError(root, handle);
  await tc(['qdisc', 'add', 'dev', 'lo', 'root', 'handle', `${handle}:`, 'htb', 'default', '0']);
}

/** Runs tc commands in order; the first refused one is the error. */
export async function tc(...commands: string[][]): Promise<void> {
  for (const c of commands) {
    const res = await run('tc', c);
    if (!res.ok) throw new PlbError('BAD_INPUT', `tc ${c.join(' ')} failed: ${res.out}`, { hint: TC_HINT });
  }
}

/** Runs tc commands, each whatever the others did (removal). */
export async function tcAll(commands: readonly string[][]): Promise<void> {
  for (const c of commands) await run('tc', c);
}

/** Removes lo's root qdisc when it is this cluster's (its handle), whatever a run left. */
export async function removeRoot(handle: string): Promise<void> {
  const res = await run('tc', ['qdisc', 'show', 'dev', 'lo']);
  if (!res.ok) return; // no tc: nothing of plb's
  if (rootOwner(parseRootQdisc(res.out), handle) === 'ours')
    await run('tc', ['qdisc', 'del', 'dev', 'lo', 'root']);
}
