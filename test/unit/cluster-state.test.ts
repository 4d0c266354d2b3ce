import {
  mkdirSync,
  mkdtempSync,
  symlinkSync,
  readFileSync,
  rmSync,
  statSync,
  writeFileSync,
  chmodSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import {
  defaultStateDir,
  ensurePassword,
  loadCredentials,
  passwordFile,
  readClusterRecord,
  removeClusterRecord,
  updateClusterRecord,
  validateClusterName,
  writeClusterRecord,
} from '../../src/cluster/state.js';
import { type ClusterRecord } from '../../src/run-format/cluster-record.js';
import { clusterSpec } from '../../src/cluster/select.js';
import { isPlbError } from '../../src/core/errors.js';

let dir: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'plb-state-'));
});
afterEach(() => {
  rmSync(dir, { recursive: true, force: true });
});

describe('password file', () => {
  it('is created once with mode 0600 and reused', () => {
    const a = ensurePassword(dir, 'c1');
    const mode = statSync(passwordFile(dir, 'c1')).mode & 0o777;
    expect(mode).toBe(0o600);
    expect(a).toMatch(/^[0-9a-f]{32}$/);
    expect(ensurePassword(dir, 'c1')).toBe(a);
    expect(readFileSync(passwordFile(dir, 'c1'), 'utf8').trim()).toBe(a);
  });

  it('differs between clusters', () => {
    expect(ensurePassword(dir, 'c1')).not.toBe(ensurePassword(dir, 'c2'));
  });

  it('tightens a loosened mode on reuse', () => {
    ensurePassword(dir, 'c1');
    chmodSync(passwordFile(dir, 'c1'), 0o644);
    ensurePassword(dir, 'c1');
    expect(statSync(passwordFile(dir, 'c1')).mode & 0o777).toBe(0o600);
  });

  it('regenerates an empty file', () => {
    ensurePassword(dir, 'c1');
    writeFileSync(passwordFile(dir, 'c1'), '');
    expect(ensurePassword(dir, 'c1')).toMatch(/^[0-9a-f]{32}$/);
  });

  it('refuses a symlinked password file and leaves its target alone', () => {
    const victim = join(dir, 'victim');
    writeFileSync(victim, 'not-a-password\n', { mode: 0o644 });
    mkdirSync(join(dir, 'c1'));
    symlinkSync(victim, passwordFile(dir, 'c1'));
    expect(() => ensurePassword(dir, 'c1')).toThrow(
      /password file .* is a symlink or unreadable; refusing it/,
    );
    expect(statSync(victim).mode & 0o777).toBe(0o644);
    expect(readFileSync(victim, 'utf8')).toBe('not-a-password\n');
  });

  it('loadCredentials gives user and database plb with the stored password', () => {
    const pw = ensurePassword(dir, 'c1');
    expect(loadCredentials(dir, 'c1')).toEqual({ user: 'plb', password: pw, database: 'plb' });
  });
});

describe('cluster record', () => {
  const record = (): ClusterRecord => ({
    version: 1,
    name: 'c1',
    id: '0123456789ab',
    driver: 'local',
    spec: clusterSpec({ name: 'c1', stateDir: dir }),
    createdAt: '2026-01-01T00:00:00.000Z',
  });

  it('round-trips and is absent before being written and after removal', () => {
    expect(readClusterRecord(dir, 'c1')).toBeNull();
    writeClusterRecord(dir, record());
    expect(readClusterRecord(dir, 'c1')).toEqual(record());
    removeClusterRecord(dir, 'c1');
    removeClusterRecord(dir, 'c1');
    expect(readClusterRecord(dir, 'c1')).toBeNull();
  });

  it('updates in place', () => {
    writeClusterRecord(dir, record());
    updateClusterRecord(dir, 'c1', (r) => ({ ...r, cpus: { r1: 0.5 } }));
    expect(readClusterRecord(dir, 'c1')?.cpus).toEqual({ r1: 0.5 });
    expect(updateClusterRecord(dir, 'nope', (r) => r)).toBeNull();
  });

  it('rejects a damaged record with a PlbError', () => {
    writeClusterRecord(dir, record());
    writeFileSync(join(dir, 'c1', 'cluster.json'), '{"version":7}');
    expect(() => readClusterRecord(dir, 'c1')).toThrow(/unknown format/);
  });
});

describe('names and folders', () => {
  it('accepts plain names and rejects path-like ones naming the field', () => {
    expect(validateClusterName('plb')).toBe('plb');
    expect(validateClusterName('plbtest-local_2')).toBe('plbtest-local_2');
    for (const bad of ['', '../x', 'a/b', 'UPPER', '-x', 'x'.repeat(41)]) {
      try {
        validateClusterName(bad);
        expect.unreachable();
      } catch (err) {
        expect(isPlbError(err, 'BAD_INPUT')).toBe(true);
        expect((err as Error).message).toMatch(/^name:/);
      }
    }
  });

  it('defaults to a per-user state dir, never the cwd; PLB_STATE_DIR overrides', () => {
    expect(defaultStateDir({}, '/home/u', 1000)).toBe('/home/u/.local/state/plb');
    expect(defaultStateDir({ XDG_STATE_HOME: '/xdg' }, '/home/u', 1000)).toBe('/xdg/plb');
    // A relative XDG_STATE_HOME is ignored (XDG spec): it would depend on the cwd.
    expect(defaultStateDir({ XDG_STATE_HOME: 'rel' }, '/home/u', 1000)).toBe('/home/u/.local/state/plb');
    // Root: a folder the local driver's postgres user can traverse.
    expect(defaultStateDir({}, '/root', 0)).toBe('/var/lib/plb');
    expect(defaultStateDir({ PLB_STATE_DIR: '/elsewhere/state', XDG_STATE_HOME: '/xdg' }, '/home/u')).toBe(
      '/elsewhere/state',
    );
    expect(defaultStateDir()).not.toBe(join(process.cwd(), '.plb'));
  });

  it('refuses a record without a cluster id (nothing in it is provably ours)', () => {
    const old = { version: 1, name: 'c1', driver: 'local', spec: clusterSpec({ name: 'c1', stateDir: dir }) };
    mkdirSync(join(dir, 'c1'));
    writeFileSync(join(dir, 'c1', 'cluster.json'), JSON.stringify(old));
    expect(() => readClusterRecord(dir, 'c1')).toThrow(/no cluster id/);
  });
});
