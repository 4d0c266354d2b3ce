import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import Docker from 'dockerode';
import { extract, type Header } from 'tar-stream';
import { describe, expect, it } from 'vitest';
import { logText } from '../../src/cluster/docker/logs.js';
import { makeTar } from '../../src/cluster/docker/tar.js';

async function entries(tar: Buffer): Promise<{ header: Header; body: string }[]> {
  const out: { header: Header; body: string }[] = [];
  const ex = extract();
  const done = new Promise<void>((resolve, reject) => {
    ex.on('entry', (header, stream, next) => {
      const parts: Buffer[] = [];
      stream.on('data', (c) => parts.push(c as Buffer));
      stream.on('end', () => {
        out.push({ header, body: Buffer.concat(parts).toString('utf8') });
        next();
      });
    });
    ex.on('finish', () => resolve());
    ex.on('error', reject);
  });
  ex.end(tar);
  await done;
  return out;
}

describe('makeTar (what putArchive copies into a container)', () => {
  const files = [
    { name: 'plb/', mode: 0o755 },
    { name: 'plb/entry.sh', mode: 0o555, content: '#!/bin/sh\necho ünïcode\n' },
    { name: 'plb/secret', mode: 0o444, content: Buffer.from('s3cret') },
  ];

  it('holds the directory and files, their modes and contents, owned by root', async () => {
    const tar = await makeTar(files);
    expect(tar.length % 512).toBe(0);
    const got = await entries(tar);
    expect(got.map((e) => [e.header.name, e.header.type, e.header.mode])).toEqual([
      ['plb/', 'directory', 0o755],
      ['plb/entry.sh', 'file', 0o555],
      ['plb/secret', 'file', 0o444],
    ]);
    expect(got[1]?.body).toBe('#!/bin/sh\necho ünïcode\n');
    expect(got[2]?.body).toBe('s3cret');
    expect(got.every((e) => e.header.uid === 0 && e.header.gid === 0)).toBe(true);
  });

  it('adds the slash a directory name lacks, and takes names past the 100 bytes of ustar', async () => {
    const long = `${'d'.repeat(60)}/${'f'.repeat(120)}`;
    const got = await entries(
      await makeTar([
        { name: 'dir', mode: 0o700 },
        { name: long, mode: 0o600, content: 'x' },
      ]),
    );
    expect(got.map((e) => e.header.name)).toEqual(['dir/', long]);
  });

  it('is read by the system tar as written', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'plb-tar-'));
    try {
      writeFileSync(join(dir, 'a.tar'), await makeTar(files));
      execFileSync('tar', ['-xf', 'a.tar', '--no-same-owner'], { cwd: dir });
      expect(readFileSync(join(dir, 'plb', 'entry.sh'), 'utf8')).toBe('#!/bin/sh\necho ünïcode\n');
      expect(statSync(join(dir, 'plb', 'entry.sh')).mode & 0o777).toBe(0o555);
      expect(readFileSync(join(dir, 'plb', 'secret'), 'utf8')).toBe('s3cret');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

/** One frame of Docker's multiplexed log stream: stream type (1 stdout, 2 stderr), length, payload. */
function frame(type: 1 | 2, text: string): Buffer {
  const body = Buffer.from(text, 'utf8');
  const head = Buffer.alloc(8);
  head.writeUInt8(type, 0);
  head.writeUInt32BE(body.length, 4);
  return Buffer.concat([head, body]);
}

describe('logText (a container log tail)', () => {
  // No request is made: only the modem's demultiplexer is used.
  const modem = new Docker({ socketPath: '/nonexistent/docker.sock' }).modem;

  it('joins stdout and stderr frames in order, without their headers', async () => {
    const buf = Buffer.concat([frame(1, 'starting\n'), frame(2, 'FATAL: ünï\n'), frame(1, 'bye\n')]);
    expect(await logText(modem, buf)).toBe('starting\nFATAL: ünï\nbye\n');
  });

  it('reads frames split across chunks of a stream', async () => {
    const buf = Buffer.concat([frame(2, 'one\n'), frame(1, 'two\n')]);
    const chunks = [buf.subarray(0, 3), buf.subarray(3, 10), buf.subarray(10)];
    expect(await logText(modem, Readable.from(chunks))).toBe('one\ntwo\n');
  });

  it('passes a TTY container log (no frames) through, and an empty log is empty', async () => {
    expect(await logText(modem, Buffer.from('plain output\n'))).toBe('plain output\n');
    expect(await logText(modem, Buffer.alloc(0))).toBe('');
  });
});
