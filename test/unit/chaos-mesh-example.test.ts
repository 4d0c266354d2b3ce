// The Kubernetes example of network faults (examples/external/chaos-mesh/): the cluster file is
// valid and has a hook for every network action, and the script writes the NetworkChaos objects
// Chaos Mesh expects (checked against a kubectl that records what it is given).
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync, chmodSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { parseAllDocuments } from 'yaml';
import { parseClusterFile } from '../../src/cluster/external/file.js';
import { FILE_NETWORK_ACTIONS } from '../../src/run-format/fault-actions.js';

const DIR = join('examples', 'external', 'chaos-mesh');
const tmp = mkdtempSync(join(tmpdir(), 'plb-chaos-mesh-'));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

/** Runs netchaos.sh with a kubectl that appends its argv and stdin to a log; returns the log. */
function netchaos(...args: string[]): { log: string; status: number } {
  const log = join(tmp, `${args.join('-')}.log`);
  const kubectl = join(tmp, 'kubectl');
  writeFileSync(
    kubectl,
    `#!/bin/sh\necho "ARGV $*" >> "${log}"\n[ "$1" = apply ] && cat >> "${log}"\nexit 0\n`,
  );
  chmodSync(kubectl, 0o755);
  try {
    execFileSync('sh', [join(DIR, 'netchaos.sh'), ...args], {
      env: { ...process.env, KUBECTL: kubectl },
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    return { log: readFileSync(log, 'utf8'), status: 0 };
  } catch (e) {
    return { log: '', status: (e as { status: number }).status };
  }
}

/** The NetworkChaos object a hook applied. */
function applied(log: string): Record<string, unknown> {
  const docs = parseAllDocuments(log.split('\n').slice(1).join('\n'));
  return docs[0]!.toJS() as Record<string, unknown>;
}

describe('examples/external/chaos-mesh', () => {
  it('fleet.yaml is a valid cluster file with a hook for every network action but reset', () => {
    const path = join(DIR, 'fleet.yaml');
    const text = readFileSync(path, 'utf8').replace(/^password: .*$/m, 'password: { env: PLB_TEST_PW }');
    const c = parseClusterFile(text, path, { PLB_TEST_PW: 'x' });
    for (const id of c.replicaIds)
      for (const a of [...FILE_NETWORK_ACTIONS.filter((x) => x !== 'reset'), 'partition-replication', 'heal'])
        expect(c.hooks.get(id)?.has(a as never), `${id} ${a}`).toBe(true);
  });

  it('a partition is a NetworkChaos partition of the pod from the clients, in plb direction terms', () => {
    const o = applied(netchaos('partition', '2', 'in').log);
    expect(o).toMatchObject({
      kind: 'NetworkChaos',
      metadata: { name: 'plb-partition-db-2', namespace: 'db' },
      spec: {
        action: 'partition',
        direction: 'from',
        mode: 'all',
        selector: { labelSelectors: { 'statefulset.kubernetes.io/pod-name': 'db-2' } },
        target: { selector: { labelSelectors: { app: 'plb' } } },
      },
    });
  });

  it('a replication partition targets the primary; delay, loss and bandwidth carry their values', () => {
    expect(applied(netchaos('partition-replication', '1', 'both').log)).toMatchObject({
      spec: {
        action: 'partition',
        direction: 'both',
        target: { selector: { labelSelectors: { 'statefulset.kubernetes.io/pod-name': 'db-0' } } },
      },
    });
    expect(applied(netchaos('delay', '1', '100', '20').log)).toMatchObject({
      spec: { action: 'delay', delay: { latency: '100ms', jitter: '20ms' } },
    });
    expect(applied(netchaos('loss', '3', '5').log)).toMatchObject({
      spec: { action: 'loss', loss: { loss: '5' } },
    });
    expect(applied(netchaos('bandwidth', '3', '1000000').log)).toMatchObject({
      spec: { action: 'bandwidth', bandwidth: { rate: '1000000bps' } },
    });
  });

  it('heal deletes what it ends; reset is refused (Chaos Mesh has none)', () => {
    const all = netchaos('heal', '2', 'all').log;
    for (const k of ['partition', 'partition-replication', 'delay', 'loss', 'bandwidth'])
      expect(all).toContain(`ARGV -n db delete networkchaos plb-${k}-db-2 --ignore-not-found`);
    const one = netchaos('heal', '2', 'partition').log.trim().split('\n');
    expect(one).toHaveLength(2);
    expect(netchaos('reset', '2').status).toBe(2);
  });
});
