import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type Docker from 'dockerode';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createDockerDriver } from '../../src/cluster/docker/driver.js';
import { createLocalDriver } from '../../src/cluster/local/index.js';
import { clusterSpec, removeOwned } from '../../src/cluster/select.js';
import { readClusterRecord, writeClusterRecord } from '../../src/cluster/state.js';

interface FakeContainer {
  Id: string;
  Names: string[];
  Labels: Record<string, string>;
}

/** Just enough of dockerode for down(): label filters ANDed, as the engine does. */
function fakeDocker(containers: FakeContainer[]): Docker {
  const matches = (c: FakeContainer, labels: string[]) =>
    labels.every((l) => {
      const [k, v] = l.split('=') as [string, string];
      return c.Labels[k] === v;
    });
  return {
    listContainers: async (opts: { filters: { label: string[] } }) =>
      containers.filter((c) => matches(c, opts.filters.label)),
    getContainer: (id: string) => ({
      remove: async () => {
        const i = containers.findIndex((c) => c.Id === id);
        if (i >= 0) containers.splice(i, 1);
      },
    }),
    listVolumes: async () => ({ Volumes: [] }),
  } as unknown as Docker;
}

const container = (id: string, cluster: string, plbId?: string): FakeContainer => ({
  Id: id,
  Names: [`/plb-${cluster}-${id}`],
  Labels: { 'plb.cluster': cluster, 'plb.server': id, ...(plbId ? { 'plb.id': plbId } : {}) },
});

let dir: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'plb-own-'));
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

describe('docker down removes only what carries its id', () => {
  it('leaves another instance of the same name alone (the loser of two concurrent ups)', async () => {
    const containers = [
      container('primary', 'x', 'aaaaaaaaaaaa'),
      container('r1', 'x', 'aaaaaaaaaaaa'),
      container('r2', 'x', 'bbbbbbbbbbbb'),
      container('r3', 'x'),
      container('primary', 'y', 'bbbbbbbbbbbb'),
    ];
    const spec = { ...clusterSpec({ name: 'x', stateDir: dir }), id: 'bbbbbbbbbbbb' };
    await createDockerDriver(spec, { docker: fakeDocker(containers) }).down();
    expect(containers.map((c) => `${c.Labels['plb.cluster']}/${c.Id}`)).toEqual([
      'x/primary',
      'x/r1',
      'x/r3',
      'y/primary',
    ]);
  });

  it('without an id (an explicit down by name) removes every container of the name', async () => {
    const containers = [
      container('primary', 'x', 'aaaaaaaaaaaa'),
      container('r1', 'x'),
      container('r1', 'y'),
    ];
    await createDockerDriver(clusterSpec({ name: 'x', stateDir: dir }), {
      docker: fakeDocker(containers),
    }).down();
    expect(containers.map((c) => c.Labels['plb.cluster'])).toEqual(['y']);
  });
});

describe('local down removes only the data folder and record of its id', () => {
  const setup = (dataId: string, recordId: string) => {
    const spec = clusterSpec({ name: 'c1', stateDir: dir, replicas: 1 });
    mkdirSync(join(dir, 'c1', 'data', 'primary'), { recursive: true });
    writeFileSync(join(dir, 'c1', 'data', '.plb-id'), `${dataId}\n`);
    writeClusterRecord(dir, {
      version: 1,
      name: 'c1',
      id: recordId,
      driver: 'local',
      spec,
      createdAt: new Date().toISOString(),
    });
    return spec;
  };

  it('a driver of another id touches neither', async () => {
    const spec = setup('aaaaaaaaaaaa', 'aaaaaaaaaaaa');
    await removeOwned(createLocalDriver({ ...spec, id: 'bbbbbbbbbbbb' }));
    expect(existsSync(join(dir, 'c1', 'data', 'primary'))).toBe(true);
    expect(readClusterRecord(dir, 'c1')?.id).toBe('aaaaaaaaaaaa');
  });

  it('the owner removes both', async () => {
    const spec = setup('aaaaaaaaaaaa', 'aaaaaaaaaaaa');
    await removeOwned(createLocalDriver({ ...spec, id: 'aaaaaaaaaaaa' }));
    expect(existsSync(join(dir, 'c1', 'data'))).toBe(false);
    expect(readClusterRecord(dir, 'c1')).toBeNull();
  });
});
