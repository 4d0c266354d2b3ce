/**
 * Issue 49, --workers: the per-second histograms of W worker processes merge exactly (HDR add,
 * never an average of percentiles) into the one-process histogram of the same values; a worker's
 * per-second counts add up; bad input is one line naming --workers, before anything starts.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Histogram } from 'hdr-histogram-js';
import { afterAll, describe, expect, it } from 'vitest';
import { resolveBenchFlags } from '../../src/bench/options/resolve.js';
import { Rng } from '../../src/core/rng.js';
import type { ServiceClass } from '../../src/core/service-class.js';
import { recordValue } from '../../src/metrics/hdr/counts.js';
import { encodeCompressedBase64 } from '../../src/metrics/hdr/encode.js';
import { newLatencyHistogram, toLatencyUs } from '../../src/metrics/hdr/histogram.js';
import { percentileMs } from '../../src/metrics/math.js';
import { mergeSeconds, WorkerFigures } from '../../src/metrics/workers/worker-book.js';
import { benchFlagValues } from '../helpers/fixtures.js';

const root = mkdtempSync(join(tmpdir(), 'plb-workers-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));

type Seconds = Map<number, Partial<Record<ServiceClass, Histogram>>>;

function record(into: Seconds, s: number, cls: ServiceClass, latencyMs: number): void {
  let byClass = into.get(s);
  if (byClass === undefined) into.set(s, (byClass = {}));
  const h = (byClass[cls] ??= newLatencyHistogram());
  recordValue(h, toLatencyUs(latencyMs));
}

describe('the exact merge of W workers', () => {
  it('equals the one-process histogram of the same values, second by second and class by class', () => {
    const rng = new Rng(49);
    for (const w of [1, 2, 3, 7]) {
      const one: Seconds = new Map();
      const parts: Seconds[] = Array.from({ length: w }, () => new Map());
      for (let n = 0; n < 20_000; n++) {
        const s = rng.int(0, 29);
        const cls: ServiceClass = rng.next() < 0.3 ? 'premium' : 'freemium';
        // Heavy tail: the parts' p95s differ, so an average of them would not be the merged p95.
        const ms = rng.next() < 0.05 ? 200 + rng.next() * 5000 : 0.2 + rng.next() * 20;
        record(one, s, cls, ms);
        record(parts[rng.int(0, w - 1)] as Seconds, s, cls, ms);
      }
      const merged = mergeSeconds(parts);
      expect([...merged.keys()].sort((a, b) => a - b)).toEqual([...one.keys()].sort((a, b) => a - b));
      for (const [s, byClass] of one)
        for (const cls of ['premium', 'freemium'] as const) {
          const expected = byClass[cls] ?? newLatencyHistogram();
          const got = merged.get(s)?.[cls] as Histogram;
          expect(got.totalCount).toBe(expected.totalCount);
          expect(got.maxValue).toBe(expected.maxValue);
          expect(got.minNonZeroValue).toBe(expected.minNonZeroValue);
          expect(percentileMs(got, 95)).toBe(percentileMs(expected, 95));
          // Count for count: the same bytes in seconds.jsonl's encoding.
          expect(encodeCompressedBase64(got)).toBe(encodeCompressedBase64(expected));
        }
    }
  });

  it("keeps a worker's queries per second and class, and its p95 over the run", () => {
    const f = new WorkerFigures(1, [1, 3], 1234);
    f.queryDone('premium', 100, 2);
    f.queryDone('premium', 999.9, 4);
    f.queryDone('premium', 2500, 8);
    f.queryDone('freemium', 1000, 1);
    f.queryFailed('freemium');
    f.sessionOpened('premium');
    f.exit = 'done';
    const s = f.summary();
    expect(s.perSecond).toEqual({ premium: [2, 0, 1], freemium: [0, 1] });
    expect(s.queries).toEqual({ premium: 3, freemium: 1 });
    expect(s.errors).toEqual({ premium: 0, freemium: 1 });
    expect(s.sessions).toEqual({ premium: 1, freemium: 0 });
    expect(s.seconds).toBe(3);
    expect(s.instances).toEqual([1, 3]);
    expect(s.exit).toBe('done');
  });
});

describe('--workers: bad input, one line naming the flag', () => {
  const fails = (over: Parameters<typeof benchFlagValues>[3]) => () =>
    resolveBenchFlags(benchFlagValues(root, 'workers', 20452, over));

  it('refuses W < 1 or not an integer', () => {
    for (const w of ['0', '-1', '1.5', 'two'])
      expect(fails({ routers: '2', workers: w })).toThrow(/^--workers: must be an integer/);
  });

  it('refuses W > N, the simulator, via, and the global view', () => {
    expect(fails({ routers: '2', workers: '3' })).toThrow(/^--workers: 3 is more than --routers 2/);
    expect(fails({ workers: '2' })).toThrow(/^--workers: 2 is more than --routers 1/);
    expect(fails({ routers: '2', workers: '2', driver: 'sim' })).toThrow(/^--workers: not with --driver sim/);
    expect(fails({ workers: '1', strategies: 'via', via: '127.0.0.1:20400' })).toThrow(
      /^--workers: not with --strategy via/,
    );
    expect(fails({ routers: '2', workers: '2', 'router-view': 'global' })).toThrow(
      /^--workers: not with --router-view global \(one router state cannot span processes/,
    );
  });

  it('records W in config.json: routers.workers', () => {
    const bench = resolveBenchFlags(benchFlagValues(root, 'workers', 20452, { routers: '4', workers: '2' }));
    expect(bench.config.routers).toMatchObject({ count: 4, workers: 2 });
  });
});
