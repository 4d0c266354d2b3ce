import { chmodSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parseStat, processTree, treeTicks, type ProcStat } from '../../src/cluster/local/procfs.js';
import { versionOf } from '../../src/cluster/local/binaries.js';
import { blockedAncestor, serverConf, slotName } from '../../src/cluster/local/index.js';
import { clusterSpec } from '../../src/cluster/select.js';

describe('procfs', () => {
  it('parses /proc/<pid>/stat, also with spaces and parentheses in the command', () => {
    const fields = ['S', '1', '42', '42', '0', '-1', '4194560', '100', '0', '0', '0', '7', '3', '5', '2'];
    const s = parseStat(`42 (postgres: r1: wal (x)) ${fields.join(' ')} 20 0 1 0`);
    expect(s).toEqual({ pid: 42, state: 'S', ppid: 1, pgid: 42, ticks: 10, childTicks: 7 });
    expect(parseStat('garbage')).toBeNull();
  });

  it('finds a process tree and sums its ticks including reaped children', () => {
    const p = (pid: number, ppid: number, ticks: number, childTicks = 0): ProcStat => ({
      pid,
      ppid,
      pgid: 10,
      state: 'S',
      ticks,
      childTicks,
    });
    const snap = [p(1, 0, 1000), p(10, 1, 5, 20), p(11, 10, 3), p(12, 10, 2), p(13, 12, 1), p(99, 1, 500)];
    const tree = processTree(10, snap);
    expect(tree.map((s) => s.pid).sort((a, b) => a - b)).toEqual([10, 11, 12, 13]);
    expect(treeTicks(tree)).toBe(5 + 20 + 3 + 2 + 1);
    expect(processTree(777, snap)).toEqual([]);
  });

  it('reads its own process from /proc', () => {
    const tree = processTree(process.pid);
    expect(tree[0]?.pid).toBe(process.pid);
  });
});

describe('local driver pieces', () => {
  it('picks the newest versioned bin folder', () => {
    expect(versionOf('/usr/lib/postgresql/15/bin')).toBe(15);
    expect(versionOf('/usr/lib/postgresql/9.6/bin')).toBe(9.6);
    expect(versionOf('/opt/pg/bin')).toBe(0);
  });

  it('configures loopback-only servers with room for every standby', () => {
    const conf = serverConf(clusterSpec({ replicas: 5, stateDir: '/tmp/x' }), 55433);
    expect(conf).toContain("listen_addresses = '127.0.0.1'");
    expect(conf).toContain('port = 55433');
    expect(conf).toMatch(/max_replication_slots = (\d+)/);
    expect(Number(/max_replication_slots = (\d+)/.exec(conf)?.[1])).toBeGreaterThanOrEqual(5);
    expect(slotName('r3')).toBe('plb_r3');
    expect(conf).toContain('max_connections = 200');
    expect(serverConf(clusterSpec({ maxConnections: 1020, stateDir: '/tmp/x' }), 55433)).toContain(
      'max_connections = 1020',
    );
  });
});

describe('blockedAncestor', () => {
  it('finds the first folder another user cannot traverse', () => {
    const root = mkdtempSync(join(tmpdir(), 'plb-anc-'));
    try {
      const inner = join(root, 'a', 'b');
      mkdirSync(inner, { recursive: true });
      const stranger = { uid: 54321, gid: 54321 };
      chmodSync(root, 0o711);
      chmodSync(join(root, 'a'), 0o700);
      chmodSync(inner, 0o755);
      expect(blockedAncestor(inner, stranger)).toBe(join(root, 'a'));
      chmodSync(join(root, 'a'), 0o711);
      expect(blockedAncestor(inner, stranger)).toBeNull();
    } finally {
      rmSync(root, { recursive: true, force: true });
    }
  });
});
