/**
 * Ownership against a real Docker engine, cheaply: an image of one file (containers can be created
 * but never start), so `up` fails right after creating its first container. Checks that the record
 * with the id exists before anything is created, that what `up` creates carries the id, and that
 * a failed up, a local-driver release and a plain `down` leave another instance's container of the
 * same name alone, while an explicit `down --name` removes it and says so. Everything this test
 * creates carries its random cluster name and is removed by that label at the end.
 */
import { execFileSync, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Docker from 'dockerode';
import { haveServerBinaries } from '../helpers/fixtures.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { dockerAvailable } from '../../src/cluster/docker/driver.js';
import { makeTar } from '../../src/cluster/docker/tar.js';
import { createLocalDriver } from '../../src/cluster/local/index.js';
import { bringUp, clusterSpec, downCluster, removeOwned } from '../../src/cluster/select.js';
import { lockFile } from '../../src/cluster/lock.js';
import { readClusterRecord } from '../../src/cluster/state.js';
import { type ClusterRecord } from '../../src/run-format/cluster-record.js';

const ci = process.env.CI === 'true';
const available = await dockerAvailable(3000);
const suffix = randomBytes(3).toString('hex');
const NAME = `plbtest-own-${suffix}`;
const IMAGE = `plbtest-own-empty:${suffix}`;
const FOREIGN_ID = 'ffffffffffff';

describe.skipIf(!available && !ci)('ownership on a real Docker engine', () => {
  const docker = new Docker();
  let stateDir = '';
  let spec: ReturnType<typeof clusterSpec>;
  const byLabel = async () =>
    docker.listContainers({ all: true, filters: { label: [`plb.cluster=${NAME}`] } });

  beforeAll(async () => {
    if (!available) throw new Error('CI=true and no Docker engine answers: the Docker tests must run in CI');
    stateDir = mkdtempSync(join(tmpdir(), 'plb-own-it-'));
    spec = clusterSpec({ name: NAME, replicas: 1, basePort: 27432, stateDir, image: IMAGE });
    execFileSync('docker', ['import', '-', IMAGE], {
      input: await makeTar([{ name: 'x', mode: 0o644, content: 'x' }]),
      stdio: ['pipe', 'ignore', 'inherit'],
    });
  });

  afterAll(async () => {
    if (!available) return;
    for (const c of await byLabel()) await docker.getContainer(c.Id).remove({ force: true });
    await docker
      .getImage(IMAGE)
      .remove()
      .catch(() => undefined);
    if (stateDir) rmSync(stateDir, { recursive: true, force: true });
  });

  it('writes the record before creating; created containers carry its id; a failed up removes them', async () => {
    const created: Record<string, string>[] = [];
    const events = (await docker.getEvents({
      filters: { type: ['container'], event: ['create'], label: [`plb.cluster=${NAME}`] },
    })) as NodeJS.ReadableStream & { destroy(): void };
    events.on('data', (b: Buffer) => {
      for (const line of b.toString().split('\n').filter(Boolean))
        created.push(
          (JSON.parse(line) as { Actor: { Attributes: Record<string, string> } }).Actor.Attributes,
        );
    });
    let atImage: ClusterRecord | null = null;
    try {
      await expect(
        bringUp({
          driver: 'docker',
          spec,
          log: (l) => {
            if (l.startsWith('image ')) atImage = readClusterRecord(stateDir, NAME);
          },
        }),
      ).rejects.toThrow(/did not come up/);
      await new Promise((r) => setTimeout(r, 500)); // let the event arrive
    } finally {
      events.destroy();
    }
    const record = atImage as ClusterRecord | null;
    expect(record?.id).toMatch(/^[0-9a-f]{12}$/);
    expect(created.length).toBeGreaterThan(0);
    for (const attrs of created) expect(attrs['plb.id']).toBe(record?.id);
    expect(await byLabel()).toEqual([]);
    expect(readClusterRecord(stateDir, NAME)).toBeNull();
  });

  it('leaves another instance of the name alone unless down names it', async () => {
    const foreign = await docker.createContainer({
      name: `plbtest-own-foreign-${suffix}`,
      Image: IMAGE,
      Cmd: ['/x'],
      Labels: { 'plb.cluster': NAME, 'plb.server': 'primary', 'plb.id': FOREIGN_ID },
    });
    const alive = async () => (await byLabel()).some((c) => c.Id === foreign.id);

    // A second `up` of the name loses: its cleanup must not take the winner's container.
    await expect(bringUp({ driver: 'docker', spec, log: () => undefined })).rejects.toThrow(
      /already has 1 container\(s\) \(id ffffffffffff\)/,
    );
    expect(await alive()).toBe(true);
    expect(readClusterRecord(stateDir, NAME)).toBeNull();

    // A local-driver bench of the same name releasing its own cluster.
    await removeOwned(createLocalDriver({ ...spec, id: '0123456789ab' }));
    expect(await alive()).toBe(true);

    const plain = await downCluster(NAME, stateDir);
    expect(plain.join('\n')).toMatch(/left alone: 1 container\(s\) .* \(id ffffffffffff\)/);
    expect(await alive()).toBe(true);

    const named = await downCluster(NAME, stateDir, { explicit: true });
    expect(named.join('\n')).toContain(`removed 1 container(s) of cluster ${NAME} made elsewhere`);
    expect(named.join('\n')).toContain(`plbtest-own-foreign-${suffix} (id ffffffffffff)`);
    expect(await alive()).toBe(false);
  });
});

function portFree(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const srv = createServer();
    srv.once('error', () => resolve(false));
    srv.listen({ port, host: '127.0.0.1', exclusive: true }, () => srv.close(() => resolve(true)));
  });
}

describe.skipIf(!haveServerBinaries)('an interrupted cluster up (local driver)', () => {
  it('Ctrl-C removes what it created, its record and its lock, and exits 130', async () => {
    const stateDir = mkdtempSync(join(tmpdir(), 'plb-own-int-'));
    const name = `plbtest-int-${suffix}`;
    const port = 27452;
    try {
      const child = spawn(
        process.execPath,
        [
          '--import',
          'tsx',
          join(import.meta.dirname, 'helpers', 'up-local.ts'),
          name,
          String(port),
          stateDir,
        ],
        { stdio: ['ignore', 'pipe', 'pipe'] },
      );
      let out = '';
      let record: ClusterRecord | null = null;
      child.stdout.on('data', (b: Buffer) => {
        out += b.toString();
        // The primary runs and a base backup is under way: interrupt half-way.
        if (out.includes('base backup for r1') && record === null) {
          record = readClusterRecord(stateDir, name);
          child.kill('SIGINT');
        }
      });
      child.stderr.on('data', (b: Buffer) => (out += b.toString()));
      const code = await new Promise<number | null>((resolve) => child.on('exit', (c) => resolve(c)));
      expect(code, out).toBe(130);
      expect((record as ClusterRecord | null)?.id, out).toMatch(/^[0-9a-f]{12}$/);
      expect(out).toMatch(/SIGINT: removing what this cluster up created/);
      expect(readClusterRecord(stateDir, name)).toBeNull();
      expect(existsSync(join(stateDir, name, 'data'))).toBe(false);
      expect(existsSync(lockFile(stateDir, name))).toBe(false);
      expect(await portFree(port)).toBe(true);
      expect(await portFree(port + 1)).toBe(true);
    } finally {
      rmSync(stateDir, { recursive: true, force: true });
    }
  }, 120_000);
});
