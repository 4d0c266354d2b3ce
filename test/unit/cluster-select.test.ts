import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ephemeralWarning } from '../../src/cluster/ports.js';
import { checkCapacity, connectionsFor } from '../../src/cluster/sizing.js';
import { describe, expect, it } from 'vitest';
import {
  chooseDriverKind,
  clusterSpec,
  DEFAULT_BASE_PORT,
  openCluster,
  parseDriverChoice,
  parsePositiveNumber,
} from '../../src/cluster/select.js';
import { isPlbError } from '../../src/core/errors.js';

function codeOf(fn: () => unknown): string | undefined {
  try {
    fn();
  } catch (err) {
    return isPlbError(err) ? `${err.code}:${err.message.split(':')[0]}` : 'other';
  }
  return undefined;
}

describe('chooseDriverKind', () => {
  it('auto takes docker when the engine answers, else local, and says why', () => {
    const d = chooseDriverKind('auto', true);
    expect(d.kind).toBe('docker');
    expect(d.reason).toMatch(/auto/);
    const l = chooseDriverKind('auto', false);
    expect(l.kind).toBe('local');
    expect(l.reason).toMatch(/no Docker engine/);
  });

  it('an explicit local never needs docker', () => {
    expect(chooseDriverKind('local', undefined).kind).toBe('local');
    expect(chooseDriverKind('local', true).kind).toBe('local');
  });

  it('an explicit docker without an engine is DOCKER_UNAVAILABLE', () => {
    expect(chooseDriverKind('docker', true).kind).toBe('docker');
    expect(() => chooseDriverKind('docker', false)).toThrow(/Docker engine/);
  });

  it('parses the --driver value', () => {
    expect(parseDriverChoice('auto')).toBe('auto');
    expect(codeOf(() => parseDriverChoice('k8s'))).toBe('BAD_INPUT:driver');
  });
});

describe('clusterSpec', () => {
  it('fills the defaults', () => {
    const s = clusterSpec({ stateDir: '/tmp/x' });
    expect(s).toMatchObject({ name: 'plb', replicas: 5, basePort: 25432, stateDir: '/tmp/x' });
    expect(s.cpus).toBeGreaterThan(0);
    expect(s.image).toBeUndefined();
  });

  it('rejects bad numbers naming the field', () => {
    expect(codeOf(() => clusterSpec({ replicas: 0 }))).toBe('BAD_INPUT:replicas');
    expect(codeOf(() => clusterSpec({ replicas: 2.5 }))).toBe('BAD_INPUT:replicas');
    expect(codeOf(() => clusterSpec({ basePort: 80 }))).toBe('BAD_INPUT:base-port');
    expect(codeOf(() => clusterSpec({ basePort: 65534, replicas: 5 }))).toBe('BAD_INPUT:base-port');
    expect(codeOf(() => clusterSpec({ cpus: 0 }))).toBe('BAD_INPUT:cpus');
    expect(codeOf(() => clusterSpec({ memoryMb: 10 }))).toBe('BAD_INPUT:memory');
    expect(codeOf(() => clusterSpec({ name: 'a b' }))).toBe('BAD_INPUT:name');
    expect(codeOf(() => clusterSpec({ maxConnections: 5 }))).toBe('BAD_INPUT:max-connections');
    expect(codeOf(() => clusterSpec({ maxConnections: 1e6 }))).toBe('BAD_INPUT:max-connections');
  });

  it('sizes memory from max_connections unless given', () => {
    expect(clusterSpec({}).maxConnections).toBe(200);
    expect(clusterSpec({}).memoryMb).toBe(856); // 256 + 3 x 200
    expect(clusterSpec({ maxConnections: 1020 }).memoryMb).toBe(3316);
    expect(clusterSpec({ maxConnections: 50 }).memoryMb).toBe(512); // the floor
    expect(clusterSpec({ maxConnections: 1020, memoryMb: 2048 }).memoryMb).toBe(2048);
  });
});

describe('sizing for a workload', () => {
  it("one survivor holds every session, plus plb's reserve", () => {
    expect(connectionsFor(1000)).toBe(1020);
    expect(connectionsFor(600)).toBe(620);
    expect(connectionsFor(0)).toBe(20);
  });

  it('an existing cluster too small for the sessions fails naming the field and the limit', () => {
    expect(() =>
      checkCapacity({ sessions: 180, cluster: 'c', maxConnections: 200, field: '--clients' }),
    ).not.toThrow();
    let err: unknown;
    try {
      checkCapacity({ sessions: 1000, cluster: 'c', maxConnections: 200, field: '--clients' });
    } catch (e) {
      err = e;
    }
    expect(isPlbError(err, 'BAD_INPUT')).toBe(true);
    expect((err as Error).message).toBe(
      '--clients: 1000 sessions need max_connections >= 1020 on every replica (one survivor holds them all), but cluster c has 200',
    );
  });

  it('parses positive numbers for flags', () => {
    expect(parsePositiveNumber('cpus', '0.25')).toBe(0.25);
    expect(codeOf(() => parsePositiveNumber('cpus', 'x'))).toBe('BAD_INPUT:cpus');
    expect(codeOf(() => parsePositiveNumber('cpus', '-1'))).toBe('BAD_INPUT:cpus');
    expect(codeOf(() => parsePositiveNumber('cpus', ''))).toBe('BAD_INPUT:cpus');
  });
});

describe('openCluster', () => {
  it('is CLUSTER_NOT_FOUND without a record', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'plb-select-'));
    try {
      await expect(openCluster('nothing', dir)).rejects.toMatchObject({ code: 'CLUSTER_NOT_FOUND' });
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('ports and the ephemeral range', () => {
  it('warns when the cluster ports overlap the kernel range clients take source ports from', () => {
    const range = { low: 32768, high: 60999 };
    expect(ephemeralWarning(25432, 25437, range)).toBeNull();
    expect(ephemeralWarning(55432, 55437, range)).toMatch(
      /^ports 55432-55437 lie in this machine's ephemeral port range 32768-60999/,
    );
    expect(ephemeralWarning(32760, 32770, range)).not.toBeNull();
    expect(ephemeralWarning(61000, 61005, range)).toBeNull();
    expect(ephemeralWarning(55432, 55437, null)).toBeNull();
  });

  it('the default base port is below the default ephemeral range', () => {
    expect(DEFAULT_BASE_PORT + 32).toBeLessThan(32768);
  });
});
