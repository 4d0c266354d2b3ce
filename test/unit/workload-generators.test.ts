import { describe, expect, it } from 'vitest';
import { compileParam, evalBound, zipfian } from '../../src/cluster/generators.js';
import { Rng } from '../../src/core/rng.js';
import { DEFAULT_WORKLOAD } from '../../src/workload/spec.js';
import { classTemplates, makeQuery } from '../../src/workload/statements.js';
import { drawStatement, highestParam, isWriteStatement } from '../../src/cluster/templates.js';

const draw = (spec: Parameters<typeof compileParam>[0], n: number, seed = 1, rows = 1000) => {
  const g = compileParam(spec, 0, { rows });
  const rng = new Rng(seed);
  return Array.from({ length: n }, () => g(rng, []));
};

describe('parameter generators', () => {
  it('int: uniform over [min, max] inclusive, bounds may use rows', () => {
    const xs = draw({ type: 'int', min: 5, max: 'rows / 100' }, 20_000) as number[];
    expect(Math.min(...xs)).toBe(5);
    expect(Math.max(...xs)).toBe(10);
    const counts = [5, 6, 7, 8, 9, 10].map((v) => xs.filter((x) => x === v).length);
    for (const c of counts) expect(c / xs.length).toBeGreaterThan(0.15);
  });

  it('zipf: in range, P(1)/P(2) near 2^s as pgbench random_zipfian', () => {
    const xs = draw({ type: 'zipf', min: 1, max: 1000, s: 1.5 }, 100_000) as number[];
    expect(Math.min(...xs)).toBeGreaterThanOrEqual(1);
    expect(Math.max(...xs)).toBeLessThanOrEqual(1000);
    const c1 = xs.filter((x) => x === 1).length;
    const c2 = xs.filter((x) => x === 2).length;
    expect(c1 / c2).toBeGreaterThan(2 ** 1.5 * 0.9);
    expect(c1 / c2).toBeLessThan(2 ** 1.5 * 1.1);
    // Bounded Zipf(1.5) over 1000: P(1) = 1 / H(1000, 1.5) ~ 0.393.
    expect(c1 / xs.length).toBeGreaterThan(0.37);
    expect(c1 / xs.length).toBeLessThan(0.41);
    // Offset range: min - 1 + Zipf.
    const ys = draw({ type: 'zipf', min: 101, max: 110, s: 2 }, 5000) as number[];
    expect(Math.min(...ys)).toBe(101);
    expect(Math.max(...ys)).toBeLessThanOrEqual(110);
  });

  it('zipf refuses s outside pgbench range', () => {
    expect(() => compileParam({ type: 'zipf', min: 1, max: 10, s: 1 }, 0, { rows: 1 })).toThrow(
      /1\.001 to 1000/,
    );
  });

  it('zipfian with n = 1 is 1', () => {
    expect(zipfian(new Rng(3), 1, 1.2)).toBe(1);
  });

  it('choice, string, float and ref', () => {
    expect(new Set(draw({ type: 'choice', values: ['a', 'b', 'c'] }, 300))).toEqual(new Set(['a', 'b', 'c']));
    const ss = draw({ type: 'string', minLength: 3, maxLength: 5, alphabet: 'xy' }, 200) as string[];
    for (const s of ss) expect(s).toMatch(/^[xy]{3,5}$/);
    const fs = draw({ type: 'float', min: 2, max: 3 }, 200) as number[];
    for (const f of fs) expect(f >= 2 && f < 3).toBe(true);
    const ref = compileParam({ type: 'ref', param: 1, plus: 'rows / 10' }, 1, { rows: 1000 });
    expect(ref(new Rng(1), [7])).toBe(107);
    expect(() => compileParam({ type: 'ref', param: 2 }, 1, { rows: 1 })).toThrow(/earlier parameter/);
  });

  it('the same seed draws the same values; another seed others', () => {
    const spec = { type: 'zipf', min: 1, max: 100_000, s: 1.1 } as const;
    expect(draw(spec, 50, 42)).toEqual(draw(spec, 50, 42));
    expect(draw(spec, 50, 42)).not.toEqual(draw(spec, 50, 43));
  });

  it('bound expressions', () => {
    expect(evalBound('max(1, rows - max(10, rows / 100))', 100_000)).toBe(99_000);
    expect(evalBound('(rows + 1) * 2', 4)).toBe(10);
    expect(() => evalBound('rows ^ 2', 4)).toThrow(/unexpected/);
  });
});

describe("plb's own templates from workloads/default.yaml", () => {
  // The generator draws of the three templates before they moved into the default file.
  const before = (kind: 'point' | 'range' | 'scan', rows: number, rng: Rng): unknown[] => {
    if (kind === 'point') return [rng.int(1, rows)];
    if (kind === 'range') {
      const width = Math.max(10, Math.floor(rows / 100));
      const lo = rng.int(1, Math.max(1, rows - width));
      return [lo, lo + width];
    }
    return [rng.next() * 0.5];
  };

  it('draw the same template and values from the same seed as before', () => {
    for (const rows of [100_000, 1000, 5]) {
      const a = new Rng(7);
      const b = new Rng(7);
      const templates = classTemplates(DEFAULT_WORKLOAD, 'premium');
      for (let i = 0; i < 2000; i++) {
        const q = drawStatement(templates, rows, a);
        const kind = b.weighted(DEFAULT_WORKLOAD.classes.premium.queryWeights);
        expect(q.template.name).toBe(kind);
        expect(q.values).toEqual(before(kind, rows, b));
      }
    }
    expect(makeQuery('range', 100_000, new Rng(1)).text).toBe(
      'SELECT count(*), avg(val), max(val) FROM plb_items WHERE id BETWEEN $1 AND $2',
    );
  });
});

describe('statement text', () => {
  it('counts parameters outside literals and comments', () => {
    expect(highestParam("SELECT $2, '$9' -- $7\n FROM t WHERE a = $1")).toBe(2);
  });
  it('tells writes from reads', () => {
    for (const w of [
      'INSERT INTO t VALUES ($1)',
      'update t set a=1',
      'WITH x AS (DELETE FROM t RETURNING *) SELECT * FROM x',
      'SELECT * FROM t FOR UPDATE',
      'SELECT a INTO b FROM t',
      'CREATE TABLE x (a int)',
    ])
      expect(isWriteStatement(w)).toBe(true);
    for (const r of [
      'SELECT 1',
      ' (SELECT a FROM t)',
      "SELECT 'insert into' FROM t",
      'WITH x AS (SELECT 1) SELECT * FROM x',
      'VALUES (1)',
      'EXPLAIN SELECT 1',
    ])
      expect(isWriteStatement(r)).toBe(false);
  });
});
