// The proxy's pure parts: the startup-packet reader, the class choice, the messages it writes,
// the backend framer, cancel keys and the flag checks.
import { serialize } from 'pg-protocol';
import { Parser } from 'pg-protocol/dist/parser.js';
import type { BackendMessage } from 'pg-protocol/dist/messages.js';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import Proxy from '../../src/commands/proxy.js';
import { runCommand } from '../helpers/fixtures.js';
import { CancelKeys } from '../../src/proxy/protocol/cancel-keys.js';
import { parseProxyFlags, type ProxyFlagValues } from '../../src/proxy/options.js';
import {
  chooseClass,
  optionValue,
  readStartupPacket,
  splitOptions,
  MAX_STARTUP_PACKET,
} from '../../src/proxy/protocol/startup-packet.js';
import {
  BackendFramer,
  backendKeyData,
  cancelRequest,
  errorResponse,
} from '../../src/proxy/protocol/wire.js';
import { msg, ready } from '../helpers/backend-messages.js';

const ssl = Buffer.from([0, 0, 0, 8, 0x04, 0xd2, 0x16, 0x2f]);
const gss = Buffer.from([0, 0, 0, 8, 0x04, 0xd2, 0x16, 0x30]);

function decode(buf: Buffer): BackendMessage[] {
  const out: BackendMessage[] = [];
  new Parser().parse(buf, (m) => out.push(m));
  return out;
}

describe('readStartupPacket', () => {
  it('reads a StartupMessage (as node-postgres writes it) with its parameters', () => {
    const packet = serialize.startup({ user: 'plb', database: 'db', application_name: 'premium' });
    const p = readStartupPacket(packet);
    expect(p).toEqual({
      kind: 'startup',
      length: packet.length,
      protocol: 3 << 16,
      params: { user: 'plb', database: 'db', application_name: 'premium', client_encoding: 'UTF8' },
    });
  });

  it('waits for the whole packet, byte by byte', () => {
    const packet = serialize.startup({ user: 'u' });
    for (let n = 0; n < packet.length; n++)
      expect(readStartupPacket(packet.subarray(0, n)).kind).toBe('incomplete');
    expect(readStartupPacket(Buffer.concat([packet, ssl])).kind).toBe('startup');
  });

  it('reads SSLRequest, GSSENCRequest and CancelRequest', () => {
    expect(readStartupPacket(ssl)).toEqual({ kind: 'ssl', length: 8 });
    expect(readStartupPacket(gss)).toEqual({ kind: 'gssenc', length: 8 });
    const c = readStartupPacket(serialize.cancel(1234, -5));
    expect(c).toMatchObject({ kind: 'cancel', length: 16, pid: 1234 });
    expect(c.kind === 'cancel' && c.secret.readInt32BE(0)).toBe(-5);
    // Protocol 3.2: a longer secret.
    const long = readStartupPacket(cancelRequest(7, Buffer.alloc(32, 9)));
    expect(long.kind === 'cancel' && long.secret.length).toBe(32);
  });

  it('refuses bad packets with a SQLSTATE and a reason', () => {
    const bad = (b: Buffer) => readStartupPacket(b);
    const len = (n: number) =>
      Buffer.from([n >>> 24, (n >>> 16) & 255, (n >>> 8) & 255, n & 255, 0, 3, 0, 0]);
    // A length no first packet has (a Terminate reads as 1476395008): closed without a word.
    expect(bad(len(4))).toEqual({ kind: 'bad-length', length: 4 });
    expect(bad(len(MAX_STARTUP_PACKET + 1))).toMatchObject({ kind: 'bad-length' });
    expect(bad(Buffer.from([0x58, 0, 0, 0, 4]))).toEqual({ kind: 'bad-length', length: 1476395008 });
    const v2 = serialize.startup({ user: 'u' });
    v2.writeInt32BE(2 << 16, 4);
    expect(bad(v2)).toMatchObject({ kind: 'invalid', code: '0A000', reason: /protocol 2\.0/ });
    const noUser = serialize.startup({ database: 'd' });
    expect(bad(noUser)).toMatchObject({ kind: 'invalid', code: '28000' });
    const unterminated = Buffer.from(serialize.startup({ user: 'u' }));
    unterminated[unterminated.length - 1] = 0x41;
    expect(bad(unterminated)).toMatchObject({ kind: 'invalid', code: '08P01' });
    const sslLong = Buffer.alloc(12);
    sslLong.writeInt32BE(12, 0);
    sslLong.writeInt32BE(80877103, 4);
    expect(bad(sslLong)).toMatchObject({ kind: 'invalid' });
  });
});

describe('the class of a session', () => {
  it('is the port by default, or from application_name / the plb.class option', () => {
    expect(chooseClass({ application_name: 'premium' }, 'freemium', 'off')).toEqual({
      ok: true,
      cls: 'freemium',
      from: 'port',
    });
    expect(chooseClass({ application_name: 'Premium ' }, 'freemium', 'application_name')).toMatchObject({
      cls: 'premium',
      from: 'application_name',
    });
    expect(chooseClass({ application_name: 'psql' }, 'freemium', 'application_name')).toMatchObject({
      cls: 'freemium',
      from: 'port',
    });
    expect(chooseClass({ options: '-c plb.class=premium' }, 'freemium', 'option')).toMatchObject({
      cls: 'premium',
      from: 'option',
    });
    expect(
      chooseClass({ options: '--plb.class=freemium -c work_mem=4MB' }, 'premium', 'option'),
    ).toMatchObject({
      cls: 'freemium',
    });
    expect(chooseClass({ options: '-c plb.class=gold' }, 'premium', 'option')).toEqual({
      ok: false,
      reason: 'plb.class must be premium or freemium, got "gold"',
    });
    expect(chooseClass({ options: '-c work_mem=4MB' }, 'premium', 'option')).toMatchObject({ from: 'port' });
  });

  it('splits options as the server does (backslash escapes)', () => {
    expect(splitOptions('  -c a=b\\ c   -cx=y ')).toEqual(['-c', 'a=b c', '-cx=y']);
    expect(optionValue('-c PLB.CLASS=premium -cplb.class=freemium', 'plb.class')).toBe('freemium');
    expect(optionValue('-c', 'plb.class')).toBeUndefined();
  });
});

describe('messages the proxy writes', () => {
  it('ErrorResponse decodes (pg-protocol) to severity, SQLSTATE and message', () => {
    const [e] = decode(errorResponse('FATAL', '57P03', 'no replica available for class premium'));
    expect(e).toMatchObject({
      name: 'error',
      severity: 'FATAL',
      code: '57P03',
      message: 'no replica available for class premium',
    });
  });

  it('BackendKeyData decodes to the key', () => {
    const secret = Buffer.alloc(4);
    secret.writeInt32BE(-42, 0);
    expect(decode(backendKeyData(99, secret))[0]).toMatchObject({
      name: 'backendKeyData',
      processID: 99,
      secretKey: -42,
    });
  });
});

describe('BackendFramer', () => {
  it('forwards whole messages and holds back an unfinished tail', () => {
    const f = new BackendFramer();
    const a = msg('D', 10);
    const b = msg('D', 20);
    const stream = Buffer.concat([a, b, ready('I')]);
    const out: Buffer[] = [];
    out.push(...f.push(stream.subarray(0, 20)));
    expect(Buffer.concat(out)).toEqual(a);
    expect(f.heldBytes).toBe(20 - a.length);
    out.push(...f.push(stream.subarray(20, 22)));
    out.push(...f.push(stream.subarray(22)));
    expect(Buffer.concat(out)).toEqual(stream);
    expect(f.heldBytes).toBe(0);
    expect(f.txStatus).toBe('I');
    expect(f.lastType).toBe(0x5a);
    expect(f.atBoundary).toBe(true);
  });

  it('splits at every byte the same way', () => {
    const stream = Buffer.concat([msg('T', 3), msg('D', 0), ready('T'), msg('E', 7), ready('E')]);
    for (let cut = 0; cut <= stream.length; cut++) {
      const f = new BackendFramer();
      const out = [...f.push(stream.subarray(0, cut)), ...f.push(stream.subarray(cut))];
      expect(Buffer.concat(out)).toEqual(stream);
      expect(f.txStatus).toBe('E');
    }
  });

  it('passes a message longer than maxHeld through as it arrives (not at a boundary meanwhile)', () => {
    const f = new BackendFramer(undefined, 64);
    const big = msg('D', 200);
    const first = f.push(big.subarray(0, 50));
    expect(Buffer.concat(first)).toEqual(big.subarray(0, 50));
    expect(f.atBoundary).toBe(false);
    const rest = f.push(Buffer.concat([big.subarray(50), ready('I')]));
    expect(Buffer.concat([...first, ...rest])).toEqual(Buffer.concat([big, ready('I')]));
    expect(f.atBoundary).toBe(true);
    expect(f.txStatus).toBe('I');
  });

  it('lets a hook replace or drop a watched message', () => {
    const seen: number[] = [];
    const f = new BackendFramer({
      types: new Set([0x4b, 0x4e]), // K, N
      fn: (type, _m) => {
        seen.push(type);
        return type === 0x4b ? backendKeyData(1, Buffer.alloc(4)) : undefined;
      },
    });
    const key = backendKeyData(777, Buffer.alloc(4, 1));
    const out = f.push(Buffer.concat([msg('R', 4), key, msg('N', 3), ready('I')]));
    expect(Buffer.concat(out)).toEqual(
      Buffer.concat([msg('R', 4), backendKeyData(1, Buffer.alloc(4)), ready('I')]),
    );
    expect(seen).toEqual([0x4b, 0x4e]);
  });

  it('throws on a length no PostgreSQL server sends', () => {
    expect(() => new BackendFramer().push(Buffer.from([0x44, 0, 0, 0, 2]))).toThrow(/protocol error/);
  });
});

describe('CancelKeys', () => {
  it('issues unique keys, finds the backend only with the right secret, forgets', () => {
    const keys = new CancelKeys();
    const backend = { replica: 'r2', port: 5433, pid: 42, secret: Buffer.from([1, 2, 3, 4]) };
    const k = keys.issue(backend);
    expect(keys.lookup(k.pid, k.secret)).toBe(backend);
    const wrong = Buffer.from(k.secret);
    wrong[0] = (wrong[0]! + 1) & 255;
    expect(keys.lookup(k.pid, wrong)).toBeUndefined();
    expect(keys.lookup(k.pid, Buffer.alloc(8))).toBeUndefined();
    // More keys than one fill of the random pool: unique pids in 1..2^31-1, 4-byte secrets.
    const pids = new Set([k.pid]);
    const secrets = new Set<string>();
    for (let i = 0; i < 2000; i++) {
      const next = keys.issue(backend);
      pids.add(next.pid);
      secrets.add(next.secret.toString('hex'));
      expect(next.pid).toBeGreaterThan(0);
      expect(next.pid).toBeLessThanOrEqual(0x7fffffff);
      expect(next.secret.length).toBe(4);
      expect(keys.lookup(next.pid, next.secret)).toBe(backend);
    }
    expect(pids.size).toBe(2001);
    expect(secrets.size).toBeGreaterThan(1990); // random 32-bit secrets: a repeat is rare
    keys.forget(k.pid);
    expect(keys.lookup(k.pid, k.secret)).toBeUndefined();
  });
});

describe('parseProxyFlags', () => {
  const flags = (over: Partial<ProxyFlagValues> = {}): ProxyFlagValues => ({
    name: 'plb',
    host: '127.0.0.1',
    'premium-port': 6432,
    'freemium-port': 6433,
    'class-from': 'off',
    strategy: 'plb',
    reference: '2:1:2',
    partition: '3:2',
    borrow: '1.5:2',
    'slow-start': '10s',
    'health-interval': '1s',
    fall: 2,
    rise: 2,
    'hang-timeout': '5s',
    'stats-every': 5,
    'stop-timeout': '30s',
    ...over,
  });

  it('resolves the defaults', () => {
    const c = parseProxyFlags(flags());
    expect(c).toMatchObject({
      ports: { premium: 6432, freemium: 6433 },
      strategy: 'plb',
      reference: { premium: 2, mixed: 1, freemium: 2 },
      slowStartMs: 10_000,
      stopTimeoutMs: 30_000,
      health: { intervalMs: 1000, timeoutMs: 1000, fall: 2, rise: 2, hangMs: 5000 },
    });
    expect(parseProxyFlags(flags({ 'freemium-port': 0, borrow: 'off' }))).toMatchObject({
      ports: { premium: 6432 },
      borrowing: false,
    });
  });

  it('names the flag in a one-line error', () => {
    expect(() => parseProxyFlags(flags({ strategy: 'fifo' }))).toThrow(/--strategy/);
    expect(() => parseProxyFlags(flags({ 'premium-port': 70000 }))).toThrow(/--premium-port/);
    expect(() => parseProxyFlags(flags({ 'premium-port': 0, 'freemium-port': 0 }))).toThrow(
      /nothing to listen/,
    );
    expect(() => parseProxyFlags(flags({ 'freemium-port': 6432 }))).toThrow(/both 6432/);
    expect(() => parseProxyFlags(flags({ 'class-from': 'user' }))).toThrow(/--class-from/);
    expect(() => parseProxyFlags(flags({ 'slow-start': 'soon' }))).toThrow(/--slow-start/);
    expect(() => parseProxyFlags(flags({ fall: 0 }))).toThrow(/--fall/);
    expect(() => parseProxyFlags(flags({ borrow: '0.5:2' }))).toThrow(/--borrow/);
    expect(() => parseProxyFlags(flags({ reference: 'x' }))).toThrow(/--reference/);
    expect(() => parseProxyFlags(flags({ 'admission-limit': 5, 'admission-premium-reserve': '2' }))).toThrow(
      /^--admission-premium-reserve: expected a number in \[0, 1\] \(got "2"\)$/,
    );
    expect(() => parseProxyFlags(flags({ 'admission-freemium-reserve': 'x' }))).toThrow(
      /^--admission-freemium-reserve: expected a number in \[0, 1\] \(got "x"\)$/,
    );
  });

  it('admission by default: both reserves 0.1, the queue per class; the freemium reserve a flag', () => {
    expect(parseProxyFlags(flags({}))).toMatchObject({
      admission: { queue: 1000, premiumReserve: 0.1, freemiumReserve: 0.1 },
    });
    expect(parseProxyFlags(flags({ 'admission-freemium-reserve': '0.25' }))).toMatchObject({
      admission: { freemiumReserve: 0.25 },
    });
  });

  it('--hang-timeout: the checks and the replica connections alike; 0 turns off only the latter', () => {
    expect(parseProxyFlags(flags({ 'hang-timeout': '2s' }))).toMatchObject({
      serverHangMs: 2000,
      health: { hangMs: 2000 },
    });
    expect(parseProxyFlags(flags({ 'hang-timeout': '0' }))).toMatchObject({
      serverHangMs: 0,
      health: { hangMs: 5000 },
    });
    expect(() => parseProxyFlags(flags({ 'hang-timeout': 'never' }))).toThrow(
      /^--hang-timeout: expected a duration/,
    );
  });

  it('paces freemium startups unless --startup-pacing off', () => {
    expect(parseProxyFlags(flags({})).startupPacing).toBe(true);
    expect(parseProxyFlags(flags({ 'startup-pacing': 'off' })).startupPacing).toBe(false);
    expect(() => parseProxyFlags(flags({ 'startup-pacing': 'maybe' }))).toThrow(
      /^--startup-pacing: expected on or off \(got "maybe"\)$/,
    );
  });

  it('connects early at the SSLRequest unless --early-connect off', () => {
    expect(parseProxyFlags(flags({})).earlyConnect).toBe(true);
    expect(parseProxyFlags(flags({ 'early-connect': 'off' })).earlyConnect).toBe(false);
    expect(() => parseProxyFlags(flags({ 'early-connect': 'soon' }))).toThrow(
      /^--early-connect: expected on or off \(got "soon"\)$/,
    );
  });

  it('--startup-timeout: 5s by default, a duration > 0', () => {
    expect(parseProxyFlags(flags({})).startupTimeoutMs).toBe(5000);
    expect(parseProxyFlags(flags({ 'startup-timeout': '750ms' })).startupTimeoutMs).toBe(750);
    for (const bad of ['0s', 'soon'])
      expect(() => parseProxyFlags(flags({ 'startup-timeout': bad }))).toThrow(
        /^--startup-timeout: expected a duration > 0/,
      );
  });

  it('an admission limit brings the premium reserve (default 0.1)', () => {
    expect(parseProxyFlags(flags({ 'admission-limit': 5 }))).toMatchObject({
      admission: { limit: 5, premiumReserve: 0.1 },
    });
  });
});

describe('plb proxy, the command: bad input is one line (or JSON), exit 1, nothing listens', () => {
  const run = (argv: string[]) => runCommand(Proxy, argv);

  it.each([
    [['--stop-timeout', 'soon'], /^Error: --stop-timeout: expected a duration/],
    [['--startup-timeout', '0'], /^Error: --startup-timeout: expected a duration > 0/],
    [['--startup-yield', 'soon'], /^Error: --startup-yield: expected a duration like 500ms, 0 or off/],
    [['--fall', '0'], /^Error: --fall: must be a positive integer/],
    [['--borrow', '1:2'], /^Error: --borrow: the premium ratio must be > 1/],
    [['--strategy', 'fifo'], /^Error: Expected --strategy=fifo to be one of: plb, rr, static, lc, wlc/],
    [
      ['--premium-port', '0', '--freemium-port', '0'],
      /^Error: --premium-port and --freemium-port are both 0/,
    ],
  ])('%j', async (argv, message) => {
    const r = await run(argv);
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(message);
    expect(r.stderr.trim().split('\n')).toHaveLength(1);
  });

  it('no such cluster: CLUSTER_NOT_FOUND, as JSON with --json', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'plb-proxy-cmd-'));
    const before = process.env.PLB_STATE_DIR;
    process.env.PLB_STATE_DIR = dir;
    try {
      const r = await run(['--name', 'nosuch', '--json']);
      expect(r.code).toBe(1);
      expect(JSON.parse(r.stdout)).toMatchObject({ error: { code: 'CLUSTER_NOT_FOUND' } });
    } finally {
      if (before === undefined) delete process.env.PLB_STATE_DIR;
      else process.env.PLB_STATE_DIR = before;
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
