import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { acquireClusterLock, lockFile, processIdentity, withClusterLock } from '../../src/cluster/lock.js';
import { isPlbError } from '../../src/core/errors.js';

let dir: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'plb-lock-'));
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

/** A pid that is surely gone: a child that has exited and been reaped. */
function deadPid(): number {
  const r = spawnSync(process.execPath, ['-e', 'process.stdout.write(String(process.pid))']);
  return Number(r.stdout.toString());
}

describe('cluster lock', () => {
  it('a second taker fails at once with one line naming the holder', () => {
    const a = acquireClusterLock(dir, 'c1', 'plb bench run --name c1');
    try {
      acquireClusterLock(dir, 'c1', 'plb cluster down');
      expect.unreachable();
    } catch (err) {
      expect(isPlbError(err, 'CLUSTER_LOCKED')).toBe(true);
      const msg = (err as Error).message;
      expect(msg).toContain(`pid ${process.pid}`);
      expect(msg).toContain(a.holder.startedAt);
      expect(msg).toContain('plb bench run --name c1');
      expect(msg).not.toContain('\n');
    } finally {
      a.release();
    }
    expect(existsSync(lockFile(dir, 'c1'))).toBe(false);
    acquireClusterLock(dir, 'c1', 'again').release();
  });

  it('locks are per cluster', () => {
    const a = acquireClusterLock(dir, 'c1', 'a');
    const b = acquireClusterLock(dir, 'c2', 'b');
    a.release();
    b.release();
  });

  it('takes over the lock of a dead process', () => {
    const file = lockFile(dir, 'c1');
    writeFileSync(file, JSON.stringify({ pid: deadPid(), startedAt: 'then', command: 'plb x', token: 't' }));
    const l = acquireClusterLock(dir, 'c1', 'plb cluster up');
    expect(JSON.parse(readFileSync(file, 'utf8'))).toMatchObject({
      pid: process.pid,
      command: 'plb cluster up',
    });
    l.release();
  });

  it('takes over a lock whose pid now names another process (pid reuse, reboot)', () => {
    const file = lockFile(dir, 'c1');
    const me = processIdentity(process.pid);
    expect(me).not.toBeNull();
    const base = { pid: process.pid, startedAt: 'then', command: 'plb x', token: 't' };
    for (const other of [
      { ...base, bootId: me!.bootId, procStart: me!.start - 1 },
      { ...base, bootId: 'another-boot', procStart: me!.start },
    ]) {
      writeFileSync(file, JSON.stringify(other));
      acquireClusterLock(dir, 'c1', 'plb cluster down').release();
    }
    // The same live process still holds.
    writeFileSync(file, JSON.stringify({ ...base, bootId: me!.bootId, procStart: me!.start }));
    expect(() => acquireClusterLock(dir, 'c1')).toThrow(/is locked by pid/);
  });

  it('release leaves a lock that is no longer ours', () => {
    const l = acquireClusterLock(dir, 'c1', 'a');
    const file = lockFile(dir, 'c1');
    const other = JSON.stringify({ pid: process.pid, startedAt: 'now', command: 'b', token: 'other' });
    writeFileSync(file, other);
    l.release();
    expect(readFileSync(file, 'utf8')).toBe(other);
  });

  it('withClusterLock releases when the work throws', async () => {
    await expect(
      withClusterLock(dir, 'c1', async () => {
        throw new Error('boom');
      }),
    ).rejects.toThrow('boom');
    expect(existsSync(lockFile(dir, 'c1'))).toBe(false);
  });

  it('escapes control characters of the holder command', () => {
    const a = acquireClusterLock(dir, 'c1', 'plb \u001b[2Jx');
    try {
      expect(() => acquireClusterLock(dir, 'c1')).toThrow(/plb \\x1b\[2Jx/);
    } finally {
      a.release();
    }
  });
});
