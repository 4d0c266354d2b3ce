import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { haproxyConfig, type HaproxyConfigOptions } from '../../src/baselines/haproxy.js';
import { parseVia } from '../../src/bench/via.js';
import HaproxyConfigCommand from '../../src/commands/haproxy-config.js';
import { haproxyBin, runCommand } from '../helpers/fixtures.js';

const replicas = [1, 2, 3, 4, 5].map((i) => ({ id: `r${i}`, host: '127.0.0.1', port: 25432 + i }));
const base: HaproxyConfigOptions = {
  cluster: 'plb',
  replicas,
  listen: { host: '127.0.0.1', port: 25500 },
  balance: 'leastconn',
  slowStartMs: 10_000,
  health: { intervalMs: 1000, fall: 2, rise: 2 },
  user: 'plb',
};

const GOLDEN = `# written by plb haproxy-config: cluster plb, 5 replicas, balance leastconn
# run: haproxy -f <this file> -p <pid file> (add -D to run it in the background)
global
    maxconn 4096

defaults
    mode tcp
    timeout connect 5s
    timeout client 1h
    timeout server 1h
    timeout check 1s
    option redispatch
    default-server check inter 1s fall 2 rise 2 slowstart 10s

frontend plb_read
    bind 127.0.0.1:25500
    default_backend plb_replicas

backend plb_replicas
    balance leastconn
    option pgsql-check user plb
    server r1 127.0.0.1:25433
    server r2 127.0.0.1:25434
    server r3 127.0.0.1:25435
    server r4 127.0.0.1:25436
    server r5 127.0.0.1:25437
`;

const work = mkdtempSync(join(tmpdir(), 'plb-haproxy-config-'));
afterAll(() => rmSync(work, { recursive: true, force: true }));

/** `haproxy -c`: the configuration is valid (nothing is started). */
function check(text: string): void {
  const file = join(work, 'haproxy.cfg');
  writeFileSync(file, text);
  execFileSync(haproxyBin as string, ['-c', '-q', '-f', file], { stdio: 'pipe' });
}

describe('haproxy-config', () => {
  it('one frontend, every replica, plb health and slow start (golden)', () => {
    expect(haproxyConfig(base)).toBe(GOLDEN);
  });

  it('roundrobin, no slow start, sub-second checks', () => {
    const text = haproxyConfig({
      ...base,
      balance: 'roundrobin',
      slowStartMs: 0,
      health: { intervalMs: 500, fall: 3, rise: 1 },
    });
    expect(text).toContain('    balance roundrobin\n');
    expect(text).toContain('    default-server check inter 500ms fall 3 rise 1\n');
    expect(text).toContain('    timeout check 500ms\n');
  });

  it('per-class listeners over static partitions 3:2', () => {
    const text = haproxyConfig({
      ...base,
      listen: parseVia('premium=127.0.0.1:25501,freemium=127.0.0.1:25502'),
      partition: { premium: 3, freemium: 2 },
    });
    expect(text).toContain('# static partitions 3:2: premium r1,r2,r3, freemium r4,r5\n');
    expect(text).toMatch(
      /frontend plb_premium\n {4}bind 127\.0\.0\.1:25501\n {4}default_backend plb_premium_replicas/,
    );
    const freemium = text.slice(text.indexOf('\nbackend plb_freemium_replicas'));
    expect(freemium.match(/server r\d/g)).toEqual(['server r4', 'server r5']);
  });

  it.runIf(haproxyBin !== null)('haproxy -c accepts what it writes', () => {
    check(haproxyConfig(base));
    check(
      haproxyConfig({
        ...base,
        balance: 'roundrobin',
        slowStartMs: 0,
        listen: parseVia('premium=127.0.0.1:25501,freemium=127.0.0.1:25502'),
      }),
    );
  });

  it('maxconn and a queue (the lc-queue baseline), and a priority queue over one backend', () => {
    const q = haproxyConfig({ ...base, queue: { maxconn: 220, timeoutMs: 10_000 } });
    expect(q).toContain('    timeout queue 10s\n');
    expect(q).toContain('    default-server check inter 1s fall 2 rise 2 slowstart 10s maxconn 220\n');
    const p = haproxyConfig({
      ...base,
      listen: parseVia('premium=127.0.0.1:25501,freemium=127.0.0.1:25502'),
      queue: { maxconn: 100, timeoutMs: 5000, priority: true },
    });
    expect(p.match(/default_backend plb_replicas/g)).toHaveLength(2);
    expect(p).toContain('set-priority-class int(-1)');
    expect(p.match(/server r\d/g)).toHaveLength(5);
    if (haproxyBin !== null) {
      check(q);
      check(p);
    }
  });

  it('the command prints it from --replica lists; bad flags are one line', async () => {
    const ok = await runCommand(HaproxyConfigCommand, [
      '--replica',
      '127.0.0.1:25433,127.0.0.1:25434',
      '--balance',
      'roundrobin',
      '--slow-start',
      '0s',
    ]);
    expect(ok.code).toBe(0);
    expect(ok.stdout).toContain('    server r2 127.0.0.1:25434\n');
    expect(ok.stdout).toContain('    balance roundrobin\n');
    const bad = await runCommand(HaproxyConfigCommand, ['--replica', '127.0.0.1', '--listen', 'x']);
    expect(bad.code).toBe(1);
    expect(bad.stderr.trim()).toMatch(/^Error: --listen: expected host:port/);
    const maxconn = await runCommand(HaproxyConfigCommand, ['--replica', '127.0.0.1:1', '--maxconn', '0']);
    expect(maxconn.stderr.trim()).toMatch(/^Error: --maxconn: /);
    const timeout = await runCommand(HaproxyConfigCommand, [
      '--replica',
      '127.0.0.1:1',
      '--queue-timeout',
      'x',
    ]);
    expect(timeout.stderr.trim()).toMatch(/^Error: --queue-timeout: /);
    const user = await runCommand(HaproxyConfigCommand, ['--replica', '127.0.0.1:1', '--user', 'a b']);
    expect(user.stderr.trim()).toMatch(/^Error: --user: /);
  });
});
