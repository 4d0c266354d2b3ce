// The kernel side of the network faults, as arguments: the delay's NFQUEUE rules, the WAL stream's
// cut, htb's classes and filters on lo, who owns lo's root qdisc, the delayer's command line and
// how it parses it (the built binary; skipped when not built, a failure with CI=true).
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { delayerArgs, delayerPath, isDelayerOf } from '../../src/cluster/net/delayer.js';
import { delayQueue, faultRules, replicationMark } from '../../src/cluster/net/iptables.js';
import {
  bandwidthCommands,
  bandwidthRemoval,
  parseRootQdisc,
  portMinors,
  qdiscHandle,
  rootOwner,
} from '../../src/cluster/net/tc.js';
import { isPlbError } from '../../src/core/errors.js';
import { failInCiWithout } from '../helpers/proxy-setup.js';

const T = { port: 25433, primaryPort: 25432 };
const OWN = ['-m', 'cgroup', '--path', '/plb-c-r1'];

describe('delay rules', () => {
  it('queue both directions of the port in INPUT, bypassed when no delayer holds the queue', () => {
    const q = ['-j', 'NFQUEUE', '--queue-num', '25433', '--queue-bypass'];
    expect(faultRules('delay', T, { ms: 50 })).toEqual([
      ['-i', 'lo', '-d', '127.0.0.1', '-p', 'tcp', '--dport', '25433', ...q],
      ['-i', 'lo', '-s', '127.0.0.1', '-p', 'tcp', '--sport', '25433', ...q],
    ]);
    expect(delayQueue(25433)).toBe(25433);
  });

  it('bandwidth has no iptables rule', () => expect(faultRules('bandwidth', T, { rate: 1e6 })).toEqual([]));
});

describe('the cut of a WAL stream', () => {
  const t = { ...T, ownPackets: OWN };
  const toPrimary = ['-o', 'lo', '-d', '127.0.0.1', '-p', 'tcp', '--dport', '25432', ...OWN];
  const fromPrimary = ['-o', 'lo', '-s', '127.0.0.1', '-p', 'tcp', '--sport', '25432'];
  const mark = '0x63590000/0xffff0000';

  it("drops the replica's packets to the primary (out) and the primary's on a marked connection (in)", () => {
    expect(replicationMark(25433)).toBe(mark);
    const markIt = [...toPrimary, '-j', 'CONNMARK', '--set-xmark', mark];
    const dropIn = [...fromPrimary, '-m', 'connmark', '--mark', mark, '-j', 'DROP'];
    const dropOut = [...toPrimary, '-j', 'DROP'];
    // The mark before the drop: a DROP ends the chain.
    expect(faultRules('partition-replication', t, {})).toEqual([markIt, dropIn, dropOut]);
    expect(faultRules('partition-replication', t, { direction: 'in' })).toEqual([markIt, dropIn]);
    expect(faultRules('partition-replication', t, { direction: 'out' })).toEqual([dropOut]);
  });

  it("is refused, with the driver's reason, when the replica's packets cannot be told apart", () => {
    let err: unknown;
    try {
      faultRules('partition-replication', { ...T, whyNoOwnPackets: 'r1 is not running' }, {});
    } catch (e) {
      err = e;
    }
    expect(isPlbError(err, 'BAD_INPUT')).toBe(true);
    expect((err as Error).message).toContain('(r1 is not running)');
  });
});

describe('htb on lo', () => {
  it("takes its root handle from the cluster's id", () => {
    expect(qdiscHandle('0123456789ab')).toBe((0x100 + 0x0123).toString(16));
    expect(qdiscHandle('ffff00000000')).toBe((0x100 + (0xffff % 0xfe00)).toString(16));
    for (const id of ['000000000000', 'fdffffffffff', 'ffffffffffff']) {
      const h = Number.parseInt(qdiscHandle(id), 16);
      expect(h).toBeGreaterThanOrEqual(0x100);
      expect(h).toBeLessThan(0xffff);
    }
  });

  it('reads the root qdisc and whose it is', () => {
    const noqueue = parseRootQdisc('qdisc noqueue 0: root refcnt 2 \n');
    expect(noqueue).toEqual({ kind: 'noqueue', handle: '0' });
    const htb = parseRootQdisc(
      'qdisc htb 1a2b: root refcnt 2 r2q 10 default 0 direct_packets_stat 0 direct_qlen 1000\nqdisc bfifo 8001: parent 1a2b:2 limit 128Kb\n',
    );
    expect(htb).toEqual({ kind: 'htb', handle: '1a2b' });
    expect(rootOwner(noqueue, '1a2b')).toBe('none');
    expect(rootOwner(null, '1a2b')).toBe('none');
    expect(rootOwner(htb, '1a2b')).toBe('ours');
    expect(rootOwner(htb, '1a2c')).toBe('other');
    expect(rootOwner(parseRootQdisc('qdisc tbf 8003: root refcnt 2 rate 1Mbit'), '8003')).toBe('other');
  });

  it('limits a port each way with a class, a byte fifo and a u32 filter on 127.0.0.1 and the port', () => {
    const { toPort, fromPort } = portMinors(25433);
    expect([toPort, fromPort]).toEqual([(25433 % 32000) * 2 + 2, (25433 % 32000) * 2 + 3]);
    const cls = (m: number) => `1a2b:${m.toString(16)}`;
    const commands = bandwidthCommands('1a2b', 25433, 10_000_000);
    expect(commands).toEqual([
      [
        'class',
        'add',
        'dev',
        'lo',
        'parent',
        '1a2b:',
        'classid',
        cls(toPort),
        'htb',
        'rate',
        '10000000bit',
        'ceil',
        '10000000bit',
        'quantum',
        '65536',
      ],
      ['qdisc', 'add', 'dev', 'lo', 'parent', cls(toPort), 'bfifo', 'limit', '131072'],
      [
        'filter',
        'add',
        'dev',
        'lo',
        'parent',
        '1a2b:',
        'protocol',
        'ip',
        'prio',
        String(toPort),
        'u32',
        'match',
        'ip',
        'protocol',
        '6',
        '0xff',
        'match',
        'ip',
        'dst',
        '127.0.0.1/32',
        'match',
        'ip',
        'dport',
        '25433',
        '0xffff',
        'flowid',
        cls(toPort),
      ],
      [
        'class',
        'add',
        'dev',
        'lo',
        'parent',
        '1a2b:',
        'classid',
        cls(fromPort),
        'htb',
        'rate',
        '10000000bit',
        'ceil',
        '10000000bit',
        'quantum',
        '65536',
      ],
      ['qdisc', 'add', 'dev', 'lo', 'parent', cls(fromPort), 'bfifo', 'limit', '131072'],
      [
        'filter',
        'add',
        'dev',
        'lo',
        'parent',
        '1a2b:',
        'protocol',
        'ip',
        'prio',
        String(fromPort),
        'u32',
        'match',
        'ip',
        'protocol',
        '6',
        '0xff',
        'match',
        'ip',
        'src',
        '127.0.0.1/32',
        'match',
        'ip',
        'sport',
        '25433',
        '0xffff',
        'flowid',
        cls(fromPort),
      ],
    ]);
    for (const c of commands) expect(c.slice(2, 4)).toEqual(['dev', 'lo']);
    // 100 ms at the rate when that is more than 128 KiB.
    expect(bandwidthCommands('1a2b', 25433, 1e9)[1]).toContain(String(1e9 / 8 / 10));
    expect(bandwidthRemoval('1a2b', 25433)).toEqual([
      ['filter', 'del', 'dev', 'lo', 'parent', '1a2b:', 'protocol', 'ip', 'prio', String(toPort), 'u32'],
      ['filter', 'del', 'dev', 'lo', 'parent', '1a2b:', 'protocol', 'ip', 'prio', String(fromPort), 'u32'],
      ['class', 'del', 'dev', 'lo', 'classid', cls(toPort)],
      ['class', 'del', 'dev', 'lo', 'classid', cls(fromPort)],
    ]);
  });
});

describe("the delayer's command line", () => {
  it('names the queue, the delay, the jitter when there is one, and the cluster', () => {
    expect(delayerArgs({ queue: 25433, ms: 50, clusterId: '0123456789ab' })).toEqual([
      '--queue',
      '25433',
      '--ms',
      '50',
      '--tag',
      'plb:0123456789ab',
    ]);
    expect(delayerArgs({ queue: 1, ms: 0.5, jitter: 20, clusterId: 'c' })).toEqual([
      '--queue',
      '1',
      '--ms',
      '0.5',
      '--jitter',
      '20',
      '--tag',
      'plb:c',
    ]);
  });

  it("is told from another process's before its pid is signalled", () => {
    const argv = ['/x/native/build/plb-delayer', ...delayerArgs({ queue: 1, ms: 5, clusterId: 'abc' })];
    expect(isDelayerOf(argv, 'abc')).toBe(true);
    expect(isDelayerOf(argv, 'abd')).toBe(false);
    expect(isDelayerOf(['/usr/bin/sleep', '--tag', 'plb:abc'], 'abc')).toBe(false);
    expect(isDelayerOf(['plb-delayer-asan', '--tag', 'plb:abc'], 'abc')).toBe(true);
    expect(isDelayerOf([], 'abc')).toBe(false);
  });
});

const built = existsSync(delayerPath());
failInCiWithout(built, `the delayer (${delayerPath()}; npm run build)`);

describe.skipIf(!built)('the delayer binary', () => {
  const exec = (args: string[]) => spawnSync(delayerPath(), args, { encoding: 'utf8', timeout: 5000 });

  it('says its version', () =>
    expect(execFileSync(delayerPath(), ['--version'], { encoding: 'utf8' })).toMatch(/^plb-delayer \d+\n$/));

  it.each([
    [['--ms', '5'], '--queue and --ms are required'],
    [['--queue', '1'], '--queue and --ms are required'],
    [['--queue', '70000', '--ms', '5'], '--queue: an integer from 0 to 65535, got "70000"'],
    [['--queue', 'x', '--ms', '5'], '--queue: an integer from 0 to 65535, got "x"'],
    [['--queue', '1', '--ms', '-1'], '--ms: a number of ms from 0 to 60000, got "-1"'],
    [['--queue', '1', '--ms', '60001'], '--ms: a number of ms from 0 to 60000, got "60001"'],
    [['--queue', '1', '--ms', 'nan'], '--ms: a number of ms from 0 to 60000, got "nan"'],
    [['--queue', '1', '--ms', '5', '--jitter', '5ms'], '--jitter: a number of ms from 0 to 60000, got "5ms"'],
    [['--queue', '1', '--ms', '5', '--seed', '-3'], '--seed: a non-negative integer, got "-3"'],
    [['--queue', '1', '--ms'], '--ms: needs a value'],
    [['--queue', '1', '--ms', '5', '--bogus', '1'], 'unknown argument --bogus'],
  ])('refuses %j: exit 2, "%s"', (args, message) => {
    const r = exec(args);
    expect(r.status).toBe(2);
    expect(r.stderr).toContain(`plb-delayer: ${message}`);
  });
});
