// Issue 11, item 8: upstream images are pulled by digest; the offline build checks the Release
// signature and never cleans up across filesystems. Nothing here pulls or builds for real.
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type Docker from 'dockerode';
import { describe, expect, it } from 'vitest';
import { ensureImage, parseImageRef, pullByDigest } from '../../src/cluster/docker/image.js';
import { OFFICIAL_IMAGE } from '../../src/cluster/docker/image-names.js';

const DIGEST = `sha256:${'ab12'.repeat(16)}`;

/** A Docker engine that has no image, answers the distribution endpoint and records every call. */
function fakeDocker(calls: string[], digest: unknown = DIGEST): Docker {
  const fake = {
    getImage: (name: string) => ({
      inspect: async () => {
        calls.push(`inspect ${name}`);
        throw Object.assign(new Error('no such image'), { statusCode: 404 });
      },
      distribution: async () => {
        calls.push(`distribution ${name}`);
        return { Descriptor: { digest }, Platforms: [] };
      },
      tag: async (o: { repo: string; tag: string }) => {
        calls.push(`tag ${name} ${o.repo}:${o.tag}`);
      },
    }),
    pull: async (name: string) => {
      calls.push(`pull ${name}`);
      return {};
    },
    modem: { followProgress: (_s: unknown, done: (err: Error | null) => void) => done(null) },
  };
  return fake as unknown as Docker;
}

describe('image references', () => {
  it.each([
    ['postgres:15', { repo: 'postgres', tag: '15' }],
    ['postgres', { repo: 'postgres', tag: 'latest' }],
    ['localhost:5000/pg:15', { repo: 'localhost:5000/pg', tag: '15' }],
    ['localhost:5000/pg', { repo: 'localhost:5000/pg', tag: 'latest' }],
    [`postgres:15@${DIGEST}`, { repo: 'postgres', tag: '15', digest: DIGEST }],
  ])('%s', (name, want) => {
    expect(parseImageRef(name)).toEqual(want);
  });

  it('refuses a digest that is not sha256 of 64 hex digits', () => {
    expect(() => parseImageRef('postgres@sha256:abc')).toThrow(/image: digest "sha256:abc" must be/);
  });
});

describe('pull by digest', () => {
  it('resolves the tag to a digest once, pulls repo@digest, points the tag at it', async () => {
    const calls: string[] = [];
    const pinned = await pullByDigest(fakeDocker(calls), 'postgres:15');
    expect(pinned).toBe(`postgres@${DIGEST}`);
    expect(calls).toEqual([
      'distribution postgres:15',
      `pull postgres@${DIGEST}`,
      `tag postgres@${DIGEST} postgres:15`,
    ]);
  });

  it('a reference with a digest is pulled as it is, no lookup', async () => {
    const calls: string[] = [];
    await pullByDigest(fakeDocker(calls), `postgres:15@${DIGEST}`);
    expect(calls).toEqual([`pull postgres@${DIGEST}`]);
  });

  it('no digest from the registry: no pull at all', async () => {
    const calls: string[] = [];
    await expect(pullByDigest(fakeDocker(calls, null), 'postgres:15')).rejects.toThrow(
      /no sha256 digest for postgres:15 \(got null\)/,
    );
    expect(calls.some((c) => c.startsWith('pull'))).toBe(false);
  });

  it('ensureImage pulls the official image by digest', async () => {
    const calls: string[] = [];
    expect(await ensureImage({ docker: fakeDocker(calls), build: false })).toBe(OFFICIAL_IMAGE);
    expect(calls.filter((c) => c.startsWith('pull'))).toEqual([`pull postgres@${DIGEST}`]);
  });
});

describe('offline build script', () => {
  const script = join(import.meta.dirname, '../../compose/build-image.sh');

  it('debootstrap checks the Release signature; every cleanup stays on one filesystem', () => {
    const out = execFileSync('/bin/sh', [script, '--dry-run', '--name', 'x:1'], {
      encoding: 'utf8',
      env: { ...process.env, PLB_DEBIAN_MIRROR: 'http://mirror.example/debian' },
    });
    const lines = out.trim().split('\n');
    expect(lines[0]).toMatch(/^debootstrap --force-check-gpg --keyring=\S+debian-archive-keyring\.gpg /);
    expect(lines[0]).toMatch(/ bookworm <rootfs> http:\/\/mirror\.example\/debian$/);
    const rms = lines.filter((l) => l.startsWith('rm '));
    expect(rms).toHaveLength(2);
    for (const l of rms) expect(l).toMatch(/^rm -rf --one-file-system /);
    expect(lines.at(-1)).toBe('docker import - x:1');
  });

  it('the commands it runs are the ones it prints (no bare debootstrap or rm -rf)', () => {
    const body = readFileSync(script, 'utf8')
      .split('\n')
      .filter((l) => !l.trim().startsWith('#') && !l.includes('echo'));
    expect(body.filter((l) => /\brm -rf\b/.test(l))).toEqual(['RM="rm -rf --one-file-system"']);
    expect(body.filter((l) => /^\s*debootstrap\b/.test(l))).toEqual([]);
  });
});
