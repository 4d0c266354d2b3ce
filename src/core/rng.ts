import { PlbError } from './errors.js';

/** Seeds are exactly the generator's 32-bit state seed: 0 .. 2^32-1, each a different schedule. */
export const MAX_SEED = 0xffffffff;

/** A seed in the generator's range, or BAD_INPUT naming the field (no silent wrap or truncation). */
export function checkSeed(seed: number, field = 'seed'): number {
  if (!Number.isInteger(seed) || seed < 0 || seed > MAX_SEED) {
    throw new PlbError('BAD_INPUT', `${field}: must be an integer from 0 to ${MAX_SEED} (got ${seed})`);
  }
  return seed;
}

/**
 * The one seeded generator of a run. Every random choice (arrivals, classes, query templates,
 * think times, parameters) draws from a Rng forked from the run seed, so a seed reproduces the
 * whole schedule. xoshiro128** with splitmix32 seeding: fast, good enough statistically.
 */
export class Rng {
  private s0: number;
  private s1: number;
  private s2: number;
  private s3: number;

  constructor(seed: number) {
    // `>>> 0` would make 2^32 the same as 0 and truncate 1e20: refuse instead.
    let x = checkSeed(seed);
    const next = (): number => {
      x = (x + 0x9e3779b9) >>> 0;
      let z = x;
      z = Math.imul(z ^ (z >>> 16), 0x85ebca6b) >>> 0;
      z = Math.imul(z ^ (z >>> 13), 0xc2b2ae35) >>> 0;
      return (z ^ (z >>> 16)) >>> 0;
    };
    this.s0 = next();
    this.s1 = next();
    this.s2 = next();
    this.s3 = next();
  }

  /** Uniform in [0, 2^32). */
  nextUint32(): number {
    const result = Math.imul(rotl(Math.imul(this.s1, 5) >>> 0, 7), 9) >>> 0;
    const t = (this.s1 << 9) >>> 0;
    this.s2 ^= this.s0;
    this.s3 ^= this.s1;
    this.s1 ^= this.s2;
    this.s0 ^= this.s3;
    this.s2 ^= t;
    this.s3 = rotl(this.s3, 11);
    return result;
  }

  /** Uniform in [0, 1). */
  next(): number {
    return this.nextUint32() / 4294967296;
  }

  /** Integer in [min, max] inclusive. */
  int(min: number, max: number): number {
    return min + Math.floor(this.next() * (max - min + 1));
  }

  /** Exponential with the given mean (inter-arrival times of a Poisson process). */
  exp(mean: number): number {
    if (mean <= 0) return 0;
    return -mean * Math.log(1 - this.next());
  }

  /** Picks a key with probability proportional to its weight. */
  weighted<K extends string>(weights: Readonly<Record<K, number>>): K {
    const entries = Object.entries(weights) as [K, number][];
    const total = entries.reduce((s, [, w]) => s + w, 0);
    let r = this.next() * total;
    for (const [k, w] of entries) {
      r -= w;
      if (r < 0) return k;
    }
    const last = entries[entries.length - 1];
    if (!last) throw new Error('weighted(): no entries');
    return last[0];
  }

  /** An independent stream, derived deterministically (one per client, per purpose). */
  fork(salt: number): Rng {
    return new Rng((this.nextUint32() ^ Math.imul(salt + 1, 0x27d4eb2d)) >>> 0);
  }
}

function rotl(x: number, k: number): number {
  return ((x << k) | (x >>> (32 - k))) >>> 0;
}
