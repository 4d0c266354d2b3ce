import { describe, expect, it } from 'vitest';
import { HostCpu, parseProcStat } from '../../src/metrics/samplers/host-cpu.js';

// Two cores: user nice system idle iowait irq softirq steal guest guest_nice.
const stat = (user: number, idle: number, steal: number, iowait = 0): string =>
  `cpu  ${user} 0 ${user / 4} ${idle} ${iowait} 0 ${user / 8} ${steal} 0 0\ncpu0 1 2 3 4 5 6 7 8 9 10\n`;

describe('the host CPU', () => {
  it('reads busy, stolen and total ticks from the first line of /proc/stat', () => {
    expect(parseProcStat(stat(800, 1000, 40, 20))).toEqual({
      busy: 800 + 200 + 100,
      steal: 40,
      total: 1100 + 1000 + 20 + 40,
    });
    expect(parseProcStat('intr 1 2 3\n')).toBeUndefined();
    expect(parseProcStat('cpu 1 2\n')).toBeUndefined();
  });

  it('gives busy and stolen time as fractions of all the cores between two samples', () => {
    let t = 0;
    let text = stat(800, 1000, 0);
    const host = new HostCpu(
      () => t,
      () => text,
    );
    // One second later on two cores, 200 ticks: 110 busy (80 user, 20 system, 10 softirq),
    // 80 idle, 10 stolen.
    t = 1000;
    text = stat(880, 1080, 10);
    const s = host.sample();
    expect(s?.midMs).toBe(500);
    expect(s?.busy).toBeCloseTo(110 / 200, 10);
    expect(s?.steal).toBeCloseTo(10 / 200, 10);
  });

  it('samples nothing when the counters cannot be read or did not move', () => {
    let fail = true;
    const host = new HostCpu(
      () => 0,
      () => {
        if (fail) throw new Error('ENOENT');
        return stat(1, 1, 0);
      },
    );
    expect(host.sample()).toBeUndefined();
    fail = false;
    expect(host.sample()).toBeUndefined(); // the first readable sample has nothing to compare with
    expect(host.sample()).toBeUndefined(); // same counters: no time passed
  });
});
