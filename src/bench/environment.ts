/**
 * What config.json records of the machine and software a run ran on (run-format/config.ts
 * environmentSchema). Every probe is bounded in time and tolerant: a fact that cannot be had is
 * null, never a failed run.
 */
import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { arch, cpus, platform, release } from 'node:os';
import { join } from 'node:path';
import type { ClusterDriver } from '../cluster/driver.js';
import { withClient } from '../cluster/pg-util.js';
import { packageRoot } from '../core/package-info.js';
import type { RunEnvironment } from '../run-format/config.js';

const PROBE_TIMEOUT_MS = 3000;

/** The environment of a run; `driver` (when given) is asked for the server and image versions. */
export async function collectEnvironment(driver?: ClusterDriver): Promise<RunEnvironment> {
  const cores = cpus();
  const [postgres, image] = await Promise.all([
    // A simulated cluster has no server to ask (its calibration is recorded instead).
    driver && driver.kind !== 'sim' ? serverVersion(driver) : null,
    driver?.kind === 'docker' ? dockerImage(driver) : null,
  ]);
  return {
    node: process.version,
    platform: platform(),
    arch: arch(),
    kernel: release(),
    cpu: { model: cores[0]?.model.trim() ?? 'unknown', count: cores.length },
    postgres,
    image,
    gitCommit: gitCommit(),
  };
}

/** server_version of the primary, or null. */
async function serverVersion(driver: ClusterDriver): Promise<string | null> {
  try {
    const primary = driver.endpoints().find((e) => e.kind === 'primary');
    if (!primary) return null;
    const creds = await driver.credentials();
    return await withClient(
      primary,
      creds,
      async (c) => {
        const r = await c.query<{ server_version: string }>('SHOW server_version');
        return r.rows[0]?.server_version ?? null;
      },
      { timeoutMs: PROBE_TIMEOUT_MS, queryTimeoutMs: PROBE_TIMEOUT_MS, applicationName: 'plb-env' },
    );
  } catch {
    return null;
  }
}

/** The image the primary container runs: its reference, id and repo digests. */
async function dockerImage(driver: ClusterDriver): Promise<RunEnvironment['image']> {
  try {
    // Loaded here, as select.ts loads the driver: a local run never loads dockerode.
    const { default: Docker } = await import('dockerode');
    const { containerName } = await import('../cluster/docker/index.js');
    const docker = new Docker({ timeout: PROBE_TIMEOUT_MS });
    const c = await docker.getContainer(containerName(driver.spec.name, 'primary')).inspect();
    const img = await docker.getImage(c.Image).inspect();
    return { ref: c.Config.Image, id: img.Id ?? null, digests: img.RepoDigests ?? [] };
  } catch {
    return null;
  }
}

/** HEAD of the plb checkout; null for an installed package (no .git of its own) or without git. */
export function gitCommit(root: string = packageRoot()): string | null {
  // Only plb's own checkout: an installed plb inside another repository must not report that one.
  if (!existsSync(join(root, '.git'))) return null;
  try {
    const out = execFileSync('git', ['rev-parse', 'HEAD'], {
      cwd: root,
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'ignore'],
      timeout: PROBE_TIMEOUT_MS,
    }).trim();
    return /^[0-9a-f]{40,64}$/.test(out) ? out : null;
  } catch {
    return null;
  }
}
