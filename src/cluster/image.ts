/**
 * The PostgreSQL image the Docker driver runs. Order: the image asked for when present locally;
 * an official postgres image when present or pullable (a registry that cannot be reached fails
 * fast); else the offline image, built once from Debian packages (debootstrap + docker import,
 * compose/build-image.sh) and reused.
 */
import { spawn } from 'node:child_process';
import { accessSync, constants } from 'node:fs';
import { delimiter, join } from 'node:path';
import Docker from 'dockerode';
import { PlbError } from '../errors.js';
import { composeFile } from './docker/assets.js';

/** Name of the image `plb image build` makes. */
export const OFFLINE_IMAGE = 'plb-postgres:15-bookworm';
/** Official image tried when no image is given. */
export const OFFICIAL_IMAGE = 'postgres:15';

export interface EnsureImageOptions {
  /** Image asked for (--image); default: OFFICIAL_IMAGE, then OFFLINE_IMAGE. */
  image?: string;
  docker?: Docker;
  log?: (line: string) => void;
  /** Build the offline image when nothing else is had (default true). */
  build?: boolean;
  /** Give up pulling after this long (default 20 s). */
  pullTimeoutMs?: number;
}

export async function imagePresent(docker: Docker, name: string): Promise<boolean> {
  try {
    await docker.getImage(name).inspect();
    return true;
  } catch (err) {
    if ((err as { statusCode?: number }).statusCode === 404) return false;
    throw new PlbError('DOCKER_UNAVAILABLE', `cannot ask the Docker engine about image ${name}`, {
      hint: 'is dockerd running and DOCKER_HOST right?',
      cause: err,
    });
  }
}

/** Pulls an image; rejects on any error or after timeoutMs. */
export async function pullImage(docker: Docker, name: string, timeoutMs = 20_000): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`pull of ${name} took over ${timeoutMs} ms`)), timeoutMs);
  });
  const pull = (async () => {
    const stream = await docker.pull(name);
    await new Promise<void>((resolve, reject) => {
      docker.modem.followProgress(stream, (err: Error | null) => (err ? reject(err) : resolve()));
    });
  })();
  try {
    await Promise.race([pull, timeout]);
  } finally {
    clearTimeout(timer);
  }
}

/** Returns the image to run, pulling or building it when needed. */
export async function ensureImage(opts: EnsureImageOptions = {}): Promise<string> {
  const docker = opts.docker ?? new Docker();
  const log = opts.log ?? (() => undefined);
  const pullTimeoutMs = opts.pullTimeoutMs ?? 20_000;

  if (opts.image !== undefined && opts.image !== OFFLINE_IMAGE) {
    if (await imagePresent(docker, opts.image)) return opts.image;
    log(`pulling ${opts.image}`);
    try {
      await pullImage(docker, opts.image, pullTimeoutMs);
      return opts.image;
    } catch (cause) {
      throw new PlbError('IMAGE_MISSING', `image ${opts.image} is not present and cannot be pulled`, {
        hint: `no registry? run \`plb image build\` and use --image ${OFFLINE_IMAGE}`,
        cause,
      });
    }
  }

  if (opts.image === undefined && (await imagePresent(docker, OFFICIAL_IMAGE))) return OFFICIAL_IMAGE;
  if (await imagePresent(docker, OFFLINE_IMAGE)) return OFFLINE_IMAGE;
  if (opts.image === undefined) {
    try {
      log(`pulling ${OFFICIAL_IMAGE}`);
      await pullImage(docker, OFFICIAL_IMAGE, pullTimeoutMs);
      return OFFICIAL_IMAGE;
    } catch (err) {
      log(`cannot pull ${OFFICIAL_IMAGE} (${firstLine(err)}); building ${OFFLINE_IMAGE} offline`);
    }
  }
  if (opts.build === false) {
    throw new PlbError('IMAGE_MISSING', `no PostgreSQL image: ${OFFLINE_IMAGE} is not built`, {
      hint: 'run `plb image build`',
    });
  }
  await buildImage({ name: OFFLINE_IMAGE, docker, log });
  return OFFLINE_IMAGE;
}

export interface BuildImageOptions {
  name?: string;
  /** Rebuild even when the image is present. */
  force?: boolean;
  docker?: Docker;
  /** Progress lines; debootstrap's per-package lines only when verbose. */
  log?: (line: string) => void;
  verbose?: boolean;
  /** Debian mirror (default: the host's apt mirror, else deb.debian.org). */
  mirror?: string;
}

export interface BuildImageResult {
  name: string;
  /** False when the image was already present and not forced. */
  built: boolean;
  seconds: number;
}

function onPath(cmd: string, extra: string[] = []): boolean {
  const dirs = [...(process.env.PATH ?? '').split(delimiter), ...extra].filter((d) => d !== '');
  return dirs.some((d) => {
    try {
      accessSync(join(d, cmd), constants.X_OK);
      return true;
    } catch {
      return false;
    }
  });
}

/** Why the offline build cannot run here, or null when it can. */
export function buildPrerequisiteProblem(): PlbError | null {
  if (typeof process.getuid === 'function' && process.getuid() !== 0) {
    return new PlbError('IMAGE_BUILD_FAILED', 'building the offline image needs root (debootstrap)', {
      hint: 'run `sudo plb image build` (or sudo compose/build-image.sh) once; the image is reused after',
    });
  }
  if (!onPath('debootstrap', ['/usr/sbin', '/sbin'])) {
    return new PlbError('IMAGE_BUILD_FAILED', 'debootstrap is missing', {
      hint: 'install it: apt-get install -y debootstrap (Debian/Ubuntu), then run `plb image build`',
    });
  }
  if (!onPath('docker')) {
    return new PlbError('IMAGE_BUILD_FAILED', 'the docker command is missing (needed for docker import)', {
      hint: 'install it: apt-get install -y docker.io',
    });
  }
  return null;
}

const CHATTY = /^I: (Retrieving|Validating|Extracting|Unpacking|Configuring|Installing)/;

/** Builds the offline image with compose/build-image.sh (the same script users can run by hand). */
export async function buildImage(opts: BuildImageOptions = {}): Promise<BuildImageResult> {
  const name = opts.name ?? OFFLINE_IMAGE;
  const docker = opts.docker ?? new Docker();
  const log = opts.log ?? (() => undefined);
  const started = Date.now();
  if (!opts.force && (await imagePresent(docker, name))) return { name, built: false, seconds: 0 };
  const problem = buildPrerequisiteProblem();
  if (problem) throw problem;

  const script = composeFile('build-image.sh');
  log(`building ${name} offline (debootstrap + docker import, about a minute or two)`);
  const env = { ...process.env, ...(opts.mirror ? { PLB_DEBIAN_MIRROR: opts.mirror } : {}) };
  const tail: string[] = [];
  const code = await new Promise<number>((resolve, reject) => {
    const child = spawn('/bin/sh', [script, '--name', name, '--force'], {
      env,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const onData = (buf: Buffer) => {
      for (const line of buf.toString('utf8').split('\n')) {
        if (line.trim() === '') continue;
        tail.push(line);
        if (tail.length > 15) tail.shift();
        if (opts.verbose || !CHATTY.test(line)) log(line);
      }
    };
    child.stdout.on('data', onData);
    child.stderr.on('data', onData);
    child.on('error', reject);
    child.on('close', (c) => resolve(c ?? 1));
  });
  if (code !== 0) {
    throw new PlbError(
      'IMAGE_BUILD_FAILED',
      `building ${name} failed (exit ${code}): ${tail.slice(-3).join(' | ')}`,
      {
        hint: 'check that the Debian mirror is reachable (PLB_DEBIAN_MIRROR) and re-run `plb image build --force`',
      },
    );
  }
  return { name, built: true, seconds: (Date.now() - started) / 1000 };
}

function firstLine(err: unknown): string {
  const msg = err instanceof Error ? err.message : String(err);
  return (msg.split('\n')[0] ?? '').trim();
}
