/**
 * Parameter generators of SQL templates (`$1`, `$2`, ... of a workload file's statement): uniform
 * and Zipfian integers (pgbench's `random` and `random_zipfian`), uniform reals, a choice from a
 * list or a file, random strings, and a reference to an earlier parameter plus an offset. Every
 * draw comes from the session's generator (a fork of the run seed), so a seed repeats the values.
 *
 * Integer bounds may be expressions over `rows`, the size of plb's own dataset (`--dataset-rows`),
 * so a template over `plb_items` follows the flag: `rows`, `rows / 100`, `max(1, rows - 1000)`.
 */
import type { ParamSpec } from '../run-format/workload-file.js';
import type { Rng } from '../core/rng.js';

/** A bound: a number or an expression over `rows` (integer arithmetic, `/` floors). */
export type Bound = number | string;

export type { ParamSpec };

/** One parameter's draw, given the values drawn so far for the same statement ($1 is values[0]). */
export type Generator = (rng: Rng, earlier: readonly unknown[]) => unknown;

/** pgbench's accepted range of the Zipfian parameter (random_zipfian). */
const ZIPF_S_MIN = 1.001;
const ZIPF_S_MAX = 1000;

const ALPHANUM = 'abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789';

/** What a generator's bounds and files are resolved against. */
export interface GeneratorContext {
  /** plb's dataset size (the `rows` of bound expressions). */
  rows: number;
  /** Reads a `choice` file (the path as written in the workload file); one value per line. */
  readChoices?: (path: string) => string[];
}

/**
 * Evaluates a bound: a number, or `rows`, integers, + - * /, parentheses, min(a, b), max(a, b).
 * Throws a plain Error saying what is wrong (the caller adds the file, line and field).
 */
export function evalBound(b: Bound, rows: number): number {
  if (typeof b === 'number') return b;
  const tokens = b.match(/\s*(\d+(?:\.\d+)?|rows|min|max|[-+*/(),]|\S)/g)?.map((t) => t.trim()) ?? [];
  let i = 0;
  const peek = () => tokens[i];
  const take = (want?: string): string => {
    const t = tokens[i++];
    if (t === undefined || (want !== undefined && t !== want))
      throw new Error(`bad expression ${JSON.stringify(b)}: expected ${want ?? 'a value'}`);
    return t;
  };
  const factor = (): number => {
    const t = take();
    if (t === '(') {
      const v = sum();
      take(')');
      return v;
    }
    if (t === '-') return -factor();
    if (t === 'rows') return rows;
    if (t === 'min' || t === 'max') {
      take('(');
      const a = sum();
      take(',');
      const c = sum();
      take(')');
      return t === 'min' ? Math.min(a, c) : Math.max(a, c);
    }
    if (/^\d/.test(t)) return Number(t);
    throw new Error(
      `bad expression ${JSON.stringify(b)}: unexpected ${JSON.stringify(t)} (only rows, numbers, + - * / ( ), min, max)`,
    );
  };
  const product = (): number => {
    let v = factor();
    while (peek() === '*' || peek() === '/') {
      const op = take();
      const r = factor();
      if (op === '/' && r === 0) throw new Error(`bad expression ${JSON.stringify(b)}: division by 0`);
      v = op === '*' ? v * r : Math.floor(v / r);
    }
    return v;
  };
  const sum = (): number => {
    let v = product();
    while (peek() === '+' || peek() === '-') v = take() === '+' ? v + product() : v - product();
    return v;
  };
  const v = sum();
  if (i < tokens.length)
    throw new Error(`bad expression ${JSON.stringify(b)}: unexpected ${JSON.stringify(tokens[i])}`);
  return v;
}

/**
 * A bounded Zipfian integer in [1, n] with exponent s > 1: P(k) proportional to k^-s, so k is
 * drawn ((k+1)/k)^s times as often as k+1 (pgbench's random_zipfian). Rejection sampling after
 * Devroye, Non-Uniform Random Variate Generation (1986), p. 550: draw from the unbounded Zipf
 * and reject past n. Two uniforms per try; at s near 1 a small n rejects often, as in pgbench.
 */
export function zipfian(rng: Rng, n: number, s: number): number {
  if (n <= 1) return 1;
  const b = 2 ** (s - 1);
  for (;;) {
    const u = 1 - rng.next();
    const v = rng.next();
    const x = Math.floor(u ** (-1 / (s - 1)));
    const t = (1 + 1 / x) ** (s - 1);
    if ((v * x * (t - 1)) / (b - 1) <= t / b && x <= n) return x;
  }
}

/** A random string of length [min, max] over the alphabet. */
function randomString(rng: Rng, min: number, max: number, alphabet: string): string {
  const len = rng.int(min, max);
  let out = '';
  for (let i = 0; i < len; i++) out += alphabet[rng.int(0, alphabet.length - 1)];
  return out;
}

/**
 * Builds the generator of one parameter (`index` is its 0-based position), checking its ranges;
 * a problem is a plain Error naming the field (the caller adds the file and line).
 */
export function compileParam(spec: ParamSpec, index: number, ctx: GeneratorContext): Generator {
  const int = (b: Bound, field: string): number => {
    let v: number;
    try {
      v = evalBound(b, ctx.rows);
    } catch (err) {
      throw new Error(`${field} ${(err as Error).message}`);
    }
    if (!Number.isSafeInteger(v)) throw new Error(`${field} must be an integer (got ${v})`);
    return v;
  };
  switch (spec.type) {
    case 'int':
    case 'zipf': {
      const min = int(spec.min, 'min');
      const max = int(spec.max, 'max');
      if (max < min) throw new Error(`max (${max}) must be >= min (${min})`);
      if (spec.type === 'int') return (rng) => rng.int(min, max);
      const s = spec.s;
      if (!(s >= ZIPF_S_MIN && s <= ZIPF_S_MAX))
        throw new Error(
          `s must be from ${ZIPF_S_MIN} to ${ZIPF_S_MAX}, as pgbench's random_zipfian (got ${s})`,
        );
      const n = max - min + 1;
      return (rng) => min - 1 + zipfian(rng, n, s);
    }
    case 'float': {
      const { min, max } = spec;
      if (!(max >= min)) throw new Error(`max (${max}) must be >= min (${min})`);
      return (rng) => min + rng.next() * (max - min);
    }
    case 'choice': {
      // A file's values are read by the workload-file reader (relative to the file) into values.
      const values: readonly (string | number)[] =
        spec.values ?? (spec.file !== undefined && ctx.readChoices ? ctx.readChoices(spec.file) : []);
      if (values.length === 0)
        throw new Error(
          spec.file !== undefined ? `file ${spec.file} has no values` : 'values must not be empty',
        );
      return (rng) => values[rng.int(0, values.length - 1)];
    }
    case 'string': {
      const alphabet = spec.alphabet ?? ALPHANUM;
      if (alphabet.length === 0) throw new Error('alphabet must not be empty');
      const min = spec.length ?? spec.minLength ?? 8;
      const max = spec.length ?? spec.maxLength ?? Math.max(min, 8);
      if (spec.length !== undefined && (spec.minLength !== undefined || spec.maxLength !== undefined))
        throw new Error('give length, or minLength and maxLength, not both');
      if (!(Number.isInteger(min) && Number.isInteger(max) && min >= 0 && max >= min && max <= 10_000))
        throw new Error(
          `lengths must be integers with 0 <= minLength <= maxLength <= 10000 (got ${min}..${max})`,
        );
      return (rng) => randomString(rng, min, max, alphabet);
    }
    case 'ref': {
      const at = spec.param - 1;
      if (!(Number.isInteger(spec.param) && at >= 0 && at < index))
        throw new Error(`param must name an earlier parameter, 1 to ${index} (got ${spec.param})`);
      const plus = spec.plus === undefined ? 0 : int(spec.plus, 'plus');
      return (_rng, earlier) => {
        const v = earlier[at];
        return typeof v === 'number' ? v + plus : v;
      };
    }
  }
}
