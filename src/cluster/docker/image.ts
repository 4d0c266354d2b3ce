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
import { errorText, PlbError } from '../../core/errors.js';
import { composeFile } from '../../core/package-info.js';

import { OFFICIAL_IMAGE, OFFLINE_IMAGE } from './image-names.js';

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

async function imagePresent(docker: Docker, name: string): Promise<boolean> {
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

/** An image reference split: `localhost:5000/pg:15@sha256:…` -> repo, tag, digest. */
export function parseImageRef(name: string): { repo: string; tag: string; digest?: string } {
  const at = name.indexOf('@');
  const digest = at >= 0 ? name.slice(at + 1) : undefined;
  const rest = at >= 0 ? name.slice(0, at) : name;
  // A colon after the last slash is the tag; one before it is a registry port.
  const colon = rest.lastIndexOf(':');
  const hasTag = colon > rest.lastIndexOf('/');
  const repo = hasTag ? rest.slice(0, colon) : rest;
  const tag = hasTag ? rest.slice(colon + 1) : 'latest';
  if (repo === '' || tag === '')
    throw new PlbError('BAD_INPUT', `image: "${name}" is not an image reference`);
  if (digest !== undefined && !DIGEST.test(digest))
    throw new PlbError('BAD_INPUT', `image: digest "${digest}" must be sha256:<64 hex digits>`);
  return digest === undefined ? { repo, tag } : { repo, tag, digest };
}

const DIGEST = /^sha256:[0-9a-f]{64}$/;

/**
 * The work's result, or a rejection after timeoutMs. The Docker engine answers over a socket in
 * real time; AbortSignal.timeout's timer does not keep the process alive.
 */
export async function withTimeout<T>(what: string, timeoutMs: number, work: Promise<T>): Promise<T> {
  const signal = AbortSignal.timeout(timeoutMs);
  let onAbort = (): void => undefined;
  const timeout = new Promise<never>((_, reject) => {
    onAbort = () => reject(new Error(`${what} took over ${timeoutMs} ms`));
    signal.addEventListener('abort', onAbort, { once: true });
  });
  try {
    return await Promise.race([work, timeout]);
  } finally {
    signal.removeEventListener('abort', onAbort);
  }
}

/** Pulls exactly the reference given; rejects on any error or after timeoutMs. */
async function pullImage(docker: Docker, name: string, timeoutMs = 20_000): Promise<void> {
  const pull = (async () => {
    const stream = await docker.pull(name);
    await new Promise<void>((resolve, reject) => {
      docker.modem.followProgress(stream, (err: Error | null) => (err ? reject(err) : resolve()));
    });
  })();
  await withTimeout(`pull of ${name}`, timeoutMs, pull);
}

/**
 * Pulls by digest, never by a tag that could move between the check and the pull: the tag is
 * resolved to its manifest digest once (the registry's distribution endpoint), `repo@digest` is
 * pulled, and the tag is pointed at what was pulled. A reference that carries a digest is pulled
 * as it is. Returns the pinned `repo@sha256:…` reference.
 */
export async function pullByDigest(
  docker: Docker,
  name: string,
  opts: { timeoutMs?: number; log?: (line: string) => void } = {},
): Promise<string> {
  const timeoutMs = opts.timeoutMs ?? 20_000;
  const ref = parseImageRef(name);
  let digest = ref.digest;
  if (digest === undefined) {
    const info = await withTimeout(
      `digest lookup of ${name}`,
      timeoutMs,
      docker.getImage(name).distribution(),
    );
    digest = info?.Descriptor?.digest;
    if (typeof digest !== 'string' || !DIGEST.test(digest))
      throw new Error(`the registry gave no sha256 digest for ${name} (got ${String(digest)})`);
  }
  const pinned = `${ref.repo}@${digest}`;
  opts.log?.(`pulling ${name} by digest: ${pinned}`);
  await pullImage(docker, pinned, timeoutMs);
  if (ref.digest === undefined) await docker.getImage(pinned).tag({ repo: ref.repo, tag: ref.tag });
  return pinned;
}

/** Returns the image to run, pulling or building it when needed. */
export async function ensureImage(opts: EnsureImageOptions = {}): Promise<string> {
  const docker = opts.docker ?? new Docker();
  const log = opts.log ?? (() => undefined);
  const pullTimeoutMs = opts.pullTimeoutMs ?? 20_000;

  if (opts.image !== undefined && opts.image !== OFFLINE_IMAGE) {
    if (await imagePresent(docker, opts.image)) return opts.image;
    try {
      await pullByDigest(docker, opts.image, { timeoutMs: pullTimeoutMs, log });
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
      await pullByDigest(docker, OFFICIAL_IMAGE, { timeoutMs: pullTimeoutMs, log });
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
function buildPrerequisiteProblem(): PlbError | null {
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
  return (errorText(err).split('\n')[0] ?? '').trim();
}
