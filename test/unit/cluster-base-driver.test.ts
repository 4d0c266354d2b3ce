import { describe, expect, it } from 'vitest';
import { serverSettings, validateSpec } from '../../src/cluster/base-driver.js';
import { createDockerDriver } from '../../src/cluster/docker/driver.js';
import { withTimeout } from '../../src/cluster/docker/image.js';
import { compareReplicaIds, replicaIds, serverIds } from '../../src/core/replica-ids.js';
import { createLocalDriver } from '../../src/cluster/local/index.js';
import { clusterSpec } from '../../src/cluster/select.js';
import { isPlbError } from '../../src/core/errors.js';

const spec = clusterSpec({ name: 'base', replicas: 3, basePort: 41000, stateDir: '/tmp/plb-base-test' });

function fieldOf(fn: () => unknown): string | undefined {
  try {
    fn();
  } catch (err) {
    return isPlbError(err, 'BAD_INPUT') ? err.message.split(':')[0] : `not BAD_INPUT: ${String(err)}`;
  }
  return undefined;
}

describe('what the drivers share', () => {
  it('both drivers check the spec alike, naming the flag', () => {
    for (const make of [createLocalDriver, createDockerDriver]) {
      expect(fieldOf(() => make({ ...spec, replicas: 0 }))).toBe('replicas');
      expect(fieldOf(() => make({ ...spec, basePort: 80 }))).toBe('base-port');
      expect(fieldOf(() => make({ ...spec, cpus: 0 }))).toBe('cpus');
      expect(fieldOf(() => make({ ...spec, maxConnections: 5 }))).toBe('max-connections');
      expect(fieldOf(() => make({ ...spec, memoryMb: 10 }))).toBe('memory');
      expect(fieldOf(() => make(spec))).toBeUndefined();
    }
    // A spec recorded on a larger host still opens (no host limits for a driver).
    expect(fieldOf(() => validateSpec({ ...spec, cpus: 4096, memoryMb: 1 << 30 }))).toBeUndefined();
    expect(fieldOf(() => validateSpec({ ...spec, cpus: 4 }, { cpus: 2, memoryMb: 1024 }))).toBe('cpus');
  });

  it('both drivers give the same endpoints and say whether quotas are enforced', () => {
    const local = createLocalDriver(spec);
    const docker = createDockerDriver(spec);
    expect(local.endpoints()).toEqual(docker.endpoints());
    expect(docker.endpoints().map((e) => [e.id, e.kind, e.port])).toEqual([
      ['primary', 'primary', 41000],
      ['r1', 'replica', 41001],
      ['r2', 'replica', 41002],
      ['r3', 'replica', 41003],
    ]);
    expect(docker.cpusEnforced).toBe(true);
    // Not read here: finding out probes (and may set up) the host's cgroups.
    expect('cpusEnforced' in local).toBe(true);
  });

  it('derives the server settings from the spec, the shared_buffers cap per driver', () => {
    const s = serverSettings({ ...spec, memoryMb: 1024 }, 32);
    expect(s).toEqual({
      maxConnections: 200,
      sharedBuffersMb: 32,
      maxWalSenders: 13,
      maxReplicationSlots: 7,
    });
    expect(serverSettings({ ...spec, memoryMb: 1024 }, 128).sharedBuffersMb).toBe(128);
    expect(serverSettings({ ...spec, memoryMb: 64 }, 128).sharedBuffersMb).toBe(16);
  });
});

describe('server ids', () => {
  it('lists them and orders them naturally', () => {
    expect(replicaIds(3)).toEqual(['r1', 'r2', 'r3']);
    expect(serverIds(2)).toEqual(['primary', 'r1', 'r2']);
    expect(['r10', 'r2', 'primary', 'r1', 'r11'].sort(compareReplicaIds)).toEqual([
      'primary',
      'r1',
      'r2',
      'r10',
      'r11',
    ]);
  });
});

describe('withTimeout', () => {
  it('passes the result through, or rejects once the time is up', async () => {
    await expect(withTimeout('quick', 1000, Promise.resolve(7))).resolves.toBe(7);
    await expect(withTimeout('slow', 20, new Promise(() => undefined))).rejects.toThrow(
      'slow took over 20 ms',
    );
    await expect(withTimeout('failing', 1000, Promise.reject(new Error('boom')))).rejects.toThrow('boom');
  });
});
