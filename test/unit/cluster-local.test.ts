import { chmodSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { spawn } from 'node:child_process';
import {
  parseStat,
  processesUnder,
  processTree,
  readStat,
  treeTicks,
  type ProcStat,
} from '../../src/cluster/local/procfs.js';
import { versionOf } from '../../src/cluster/local/binaries.js';
import { killServer, killStrays, pauseServer } from '../../src/cluster/local/processes.js';
import { blockedAncestor } from '../../src/cluster/local/data-folder.js';
import { serverConf, slotName } from '../../src/cluster/local/server-conf.js';
import { clusterSpec } from '../../src/cluster/select.js';

describe('procfs', () => {
  it('finds the processes left working in a folder (cwd, -D dir, -Ddir, --pgdata=dir), nothing else', async () => {
    const root = mkdtempSync(join(tmpdir(), 'plb-strays-'));
    const data = join(root, 'data');
    mkdirSync(join(data, 'r1'), { recursive: true });
    // exec: one process each (a child sleep would share the cwd and be found too, rightly).
    const sleeper = (args: string[], cwd = root) =>
      spawn('/bin/sh', ['-c', args.length > 0 ? 'sleep 30; :' : 'exec sleep 30', 'sh', ...args], {
        cwd,
        stdio: 'ignore',
        detached: true,
      });
    const inCwd = sleeper([], join(data, 'r1'));
    const dashD = sleeper(['-D', join(data, 'r1')]);
    const glued = sleeper([`-D${join(data, 'r1')}`]);
    const long = sleeper([`--pgdata=${join(data, 'r1')}`]);
    const outside = sleeper(['-D', `${data}-other`]);
    try {
      await new Promise((r) => setTimeout(r, 100));
      expect(processesUnder(data).sort()).toEqual([inCwd.pid, dashD.pid, glued.pid, long.pid].sort());
    } finally {
      // Each sleeper leads its own process group: this ends it and its sleep.
      for (const c of [inCwd, dashD, glued, long, outside]) process.kill(-(c.pid as number), 'SIGKILL');
      rmSync(root, { recursive: true, force: true });
    }
  });

  it('ends strays that keep forking: none is left, also a child forked between a scan and a kill', async () => {
    // A shell forking without pause stands in for an initdb starting its `postgres --check`.
    // Five times: a single scan-and-kill left a stray in 18 of 20 tries of this.
    for (let i = 0; i < 5; i++) {
      const root = mkdtempSync(join(tmpdir(), 'plb-forker-'));
      const forker = spawn('/bin/sh', ['-c', 'while :; do sleep 5 & done'], {
        cwd: root,
        stdio: 'ignore',
        detached: true,
      });
      try {
        await new Promise((r) => setTimeout(r, 100));
        await killStrays(root);
        expect(processesUnder(root), `try ${i}`).toEqual([]);
      } finally {
        try {
          process.kill(-(forker.pid as number), 'SIGKILL');
        } catch {
          // ended by killStrays, as it should be
        }
        for (const p of processesUnder(root)) process.kill(p, 'SIGKILL');
        rmSync(root, { recursive: true, force: true });
      }
    }
  });

  it('kills a server with every child, also one forked while the kill was under way', async () => {
    // The shell stands in for a postmaster forking backends as clients connect.
    // Five times: reading the tree before stopping the parent left a child in 19 of 20 tries.
    for (let i = 0; i < 5; i++) {
      const root = mkdtempSync(join(tmpdir(), 'plb-forker-'));
      const server = spawn('/bin/sh', ['-c', 'while :; do sleep 5 & done'], {
        cwd: root,
        stdio: 'ignore',
        detached: true,
      });
      try {
        await new Promise((r) => setTimeout(r, 100));
        await killServer(server.pid as number);
        expect(processesUnder(root), `try ${i}`).toEqual([]);
      } finally {
        for (const p of processesUnder(root)) process.kill(p, 'SIGKILL');
        rmSync(root, { recursive: true, force: true });
      }
    }
  });

  it('pauses a server with every child, also one forked while the pause was under way', async () => {
    for (let i = 0; i < 5; i++) {
      const root = mkdtempSync(join(tmpdir(), 'plb-forker-'));
      const server = spawn('/bin/sh', ['-c', 'while :; do sleep 5 & done'], {
        cwd: root,
        stdio: 'ignore',
        detached: true,
      });
      try {
        await new Promise((r) => setTimeout(r, 100));
        await pauseServer(server.pid as number);
        await new Promise((r) => setTimeout(r, 50));
        const running = processesUnder(root).filter((p) => readStat(p)?.state !== 'T');
        expect(running, `try ${i}`).toEqual([]);
      } finally {
        for (const p of processesUnder(root)) process.kill(p, 'SIGKILL');
        rmSync(root, { recursive: true, force: true });
      }
    }
  });

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
