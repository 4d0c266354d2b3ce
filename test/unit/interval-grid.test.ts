// The bootstrap's fast layout (sparse decoding, shared grid, chunked block tables) gives exactly
// what merging the drawn seconds' histograms with hdr-histogram-js gives, resample by resample.
import * as hdr from 'hdr-histogram-js';
import type { Histogram } from 'hdr-histogram-js';
import { describe, expect, it } from 'vitest';
import { newLatencyHistogram } from '../../src/metrics/hdr/histogram.js';
import {
  bootstrapCell,
  generator,
  hashSeed,
  pointValues,
  prepareCell,
  runOf,
} from '../../src/metrics/intervals/intervals.js';
import { newLifetimeHistogram } from '../../src/metrics/store/seconds.js';
import { decodeSparse, sparseOfHistogram } from '../../src/metrics/hdr/sparse-counts.js';

interface Sec {
  latency: Histogram;
  lifetime: Histogram;
}

/** Seconds with heavy tails (so p99 lands in sparse chunks) and a few empty seconds. */
function seconds(seed: number, n: number): Sec[] {
  const rand = generator(seed);
  return Array.from({ length: n }, (_, s) => {
    const latency = newLatencyHistogram();
    const lifetime = newLifetimeHistogram();
    const q = s % 7 === 3 ? 0 : 20 + Math.floor(rand() * 60);
    for (let i = 0; i < q; i++) latency.recordValue(Math.round(500 + 20_000 * rand() ** 4 * (1 + s / n)));
    for (let i = 0; i < q / 10; i++) lifetime.recordValue(Math.round(100 + 9000 * rand()));
    return { latency, lifetime };
  });
}

function mergedPercentile(hs: Histogram[], p: number, life = false): number {
  const m = life ? newLifetimeHistogram() : newLatencyHistogram();
  for (const h of hs) m.add(h);
  return m.totalCount === 0 ? NaN : m.getValueAtPercentile(p);
}

describe('interval grid', () => {
  it('decodes a compressed histogram to the same buckets the library iterates', () => {
    const [sec] = seconds(3, 1);
    const h = sec!.latency;
    h.recordValueWithCount(12_345_678, 3_000_000_000); // a 5-byte ZigZag count
    const b64 = hdr.encodeIntoCompressedBase64(h);
    const direct = sparseOfHistogram(hdr.decodeFromCompressedBase64(b64));
    expect(decodeSparse(b64)).toEqual(direct);
    expect(decodeSparse(b64)).toEqual(sparseOfHistogram(h));
    expect(() => decodeSparse('bm90IGEgaGlzdG9ncmFt')).toThrow(/not a V2/);
  });

  it('each resample is the merge of its drawn blocks, for every metric', () => {
    const runs = [seconds(11, 37), seconds(12, 30)];
    const block = 6;
    const B = 15;
    const boot = bootstrapCell(runs, { key: 'cell', block, resamples: B });
    const rand = generator(hashSeed('cell'));
    for (let b = 0; b < B; b++) {
      const lat: Histogram[] = [];
      const life: Histogram[] = [];
      for (const r of runs)
        for (let taken = 0; taken < r.length; taken += block) {
          const start = Math.floor(rand() * r.length);
          const w = Math.min(block, r.length - taken);
          for (let j = 0; j < w; j++) {
            const s = r[(start + j) % r.length]!;
            lat.push(s.latency);
            life.push(s.lifetime);
          }
        }
      expect(boot.replicates.p50[b]).toBe(mergedPercentile(lat, 50) / 1000);
      expect(boot.replicates.p95[b]).toBe(mergedPercentile(lat, 95) / 1000);
      expect(boot.replicates.p99[b]).toBe(mergedPercentile(lat, 99) / 1000);
      expect(boot.replicates.goodput[b]).toBe(lat.reduce((s, h) => s + h.totalCount, 0) / 67);
      expect(boot.replicates.lifetime[b]).toBe(mergedPercentile(life, 50, true));
    }
  });

  it('a prepared cell and a view of one run give what the raw seconds give', () => {
    const runs = [seconds(21, 30), seconds(22, 45)];
    const prep = prepareCell(runs);
    expect(pointValues(prep)).toEqual(pointValues(runs));
    expect(pointValues(runOf(prep, 1))).toEqual(pointValues([runs[1]!]));
    const a = bootstrapCell(runOf(prep, 1), { key: 'one', block: 5, resamples: 50 });
    const b = bootstrapCell([runs[1]!], { key: 'one', block: 5, resamples: 50 });
    expect(a).toEqual(b);
  });
});
