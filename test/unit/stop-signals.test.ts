import { EventEmitter } from 'node:events';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { handleStopSignals } from '../../src/cli/stop-signals.js';
import { createRunWriter, RUN_FILES } from '../../src/metrics/store/run-writer.js';

const root = mkdtempSync(join(tmpdir(), 'plb-signals-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));

function setup(): {
  target: EventEmitter;
  exits: number[];
  warnings: string[];
  stop: ReturnType<typeof handleStopSignals>;
} {
  const target = new EventEmitter();
  const exits: number[] = [];
  const warnings: string[] = [];
  const stop = handleStopSignals({
    warn: (l) => warnings.push(l),
    exit: (c) => exits.push(c),
    target: target as unknown as NodeJS.Process,
  });
  return { target, exits, warnings, stop };
}

describe('stop signals', () => {
  it.each([
    ['SIGINT', 130],
    ['SIGTERM', 143],
    ['SIGHUP', 129],
  ])('%s: the graceful path (abort, no exit) and exit code %d', (sig, code) => {
    const { target, exits, warnings, stop } = setup();
    expect(stop.signal.aborted).toBe(false);
    target.emit(sig);
    expect(stop.signal.aborted).toBe(true);
    expect(stop.code()).toBe(code);
    expect(exits).toEqual([]);
    expect(warnings[0]).toMatch(new RegExp(`^${sig}: stopping gracefully`));
    stop.dispose();
    expect(target.listenerCount(sig)).toBe(0);
  });

  it('the second signal exits at once and marks the open run directory incomplete', () => {
    const writer = createRunWriter({
      outDir: root,
      strategy: 'plb',
      plan: 'p',
      seed: 1,
      clients: 1,
      mix: { premium: 1, freemium: 1 },
      replicas: ['r1'],
      refWindowS: 1,
      warmupS: 0,
    });
    const { target, exits, stop } = setup();
    target.emit('SIGTERM');
    expect(existsSync(join(writer.dir, RUN_FILES.incomplete))).toBe(false);
    target.emit('SIGINT');
    expect(exits).toEqual([143]);
    expect(readFileSync(join(writer.dir, RUN_FILES.incomplete), 'utf8')).toMatch(/second stop signal/);
    // RUNNING stays: the report rebuilds the summary from what is on disk.
    expect(existsSync(join(writer.dir, RUN_FILES.running))).toBe(true);
    stop.dispose();
    writer.finish(0, false);
  });
});

describe('SIGHUP with a reload (plb proxy)', () => {
  it('reloads instead of stopping; SIGINT still stops', () => {
    const target = new EventEmitter();
    let reloads = 0;
    const stop = handleStopSignals({
      warn: () => undefined,
      exit: () => undefined,
      target: target as unknown as NodeJS.Process,
      reload: () => void (reloads += 1),
    });
    target.emit('SIGHUP');
    target.emit('SIGHUP');
    expect(reloads).toBe(2);
    expect(stop.signal.aborted).toBe(false);
    target.emit('SIGINT');
    expect(stop.signal.aborted).toBe(true);
    expect(stop.code()).toBe(130);
    stop.dispose();
  });
});
