import { parsePartition, parseRoleVector } from '../../src/cli/router-values.js';
import { describe, expect, it } from 'vitest';
import { isPlbError } from '../../src/core/errors.js';
import { fullReference, partitionFor, targetRoleTable, targetRoleVector } from '../../src/router/index.js';

const v = (premium: number, mixed: number, freemium: number) => ({ premium, mixed, freemium });

describe('targetRoleVector with reference 2:1:2', () => {
  const ref = v(2, 1, 2);
  it.each([
    [0, v(0, 0, 0)],
    [1, v(0, 1, 0)],
    [2, v(1, 0, 1)],
    [3, v(2, 0, 1)],
    [4, v(2, 1, 1)], // 1.6 -> 2 each, mixed 0 -> freemium gives one
    [5, v(2, 1, 2)],
    [6, v(2, 2, 2)], // 2.4 -> 2 each, mixed is the residual
    [7, v(3, 1, 3)], // 2.8 -> 3 each
  ])('K+=%i', (k, expected) => {
    expect(targetRoleVector(k, ref)).toEqual(expected);
  });
});

describe('targetRoleVector with reference 4:2:4 (ten replicas)', () => {
  const ref = v(4, 2, 4);
  it.each([
    [10, v(4, 2, 4)],
    [9, v(4, 1, 4)],
    [8, v(3, 2, 3)],
    [7, v(3, 1, 3)],
    [6, v(2, 2, 2)],
    [5, v(2, 1, 2)],
    [4, v(2, 1, 1)],
    [3, v(2, 0, 1)],
    [2, v(1, 0, 1)],
    [1, v(0, 1, 0)],
    [0, v(0, 0, 0)],
  ])('K+=%i', (k, expected) => {
    expect(targetRoleVector(k, ref)).toEqual(expected);
  });

  it('equals the 2:1:2 targets (the reference is a ratio)', () => {
    for (let k = 0; k <= 12; k++) expect(targetRoleVector(k, ref)).toEqual(targetRoleVector(k, v(2, 1, 2)));
  });
});

describe('targetRoleVector floors and rounding', () => {
  it('sums to K+ and holds the floors for K+ >= 4 on odd references', () => {
    const refs = [v(5, 0, 0), v(0, 5, 0), v(0, 0, 5), v(1, 0, 1), v(3, 1, 1), v(1, 1, 8), v(7, 0, 3)];
    for (const ref of refs) {
      for (let k = 4; k <= 30; k++) {
        const t = targetRoleVector(k, ref);
        expect(t.premium + t.mixed + t.freemium).toBe(k);
        expect(t.premium).toBeGreaterThanOrEqual(1);
        expect(t.mixed).toBeGreaterThanOrEqual(1);
        expect(t.freemium).toBeGreaterThanOrEqual(1);
      }
    }
  });
  it('takes from freemium first when mixed would be empty', () => {
    expect(targetRoleVector(4, v(1, 0, 1))).toEqual(v(2, 1, 1));
    expect(targetRoleVector(5, v(1, 0, 1))).toEqual(v(3, 1, 1)); // 2.5 -> 3 each; freemium gives both
  });
  it('takes from premium only when freemium is at its floor', () => {
    expect(targetRoleVector(4, v(9, 0, 1))).toEqual(v(2, 1, 1)); // 3.6 -> 4, f floor 1, mixed needs 2 from premium
  });
  it('rounds half up exactly (no float drift)', () => {
    expect(targetRoleVector(6, v(1, 2, 1))).toEqual(v(2, 2, 2)); // 1.5 -> 2
  });
  it('rejects bad input', () => {
    expect(() => targetRoleVector(-1, v(2, 1, 2))).toThrow(/survivors/);
    expect(() => targetRoleVector(5, v(0, 0, 0))).toThrow(/reference/);
  });
});

describe('fullReference and targetRoleTable', () => {
  it('scales 2:1:2 to K', () => {
    expect(fullReference(5)).toEqual(v(2, 1, 2));
    expect(fullReference(10)).toEqual(v(4, 2, 4));
    expect(fullReference(3)).toEqual(v(2, 0, 1));
  });
  it('lists K down to 0', () => {
    const rows = targetRoleTable(5);
    expect(rows.map((r) => r.survivors)).toEqual([5, 4, 3, 2, 1, 0]);
    expect(rows[1]).toEqual({ survivors: 4, ...v(2, 1, 1) });
  });
});

describe('parsers', () => {
  it('parses 2:1:2 and 3:2', () => {
    expect(parseRoleVector('2:1:2')).toEqual(v(2, 1, 2));
    expect(parseRoleVector(' 4:2:4 ')).toEqual(v(4, 2, 4));
    expect(parsePartition('3:2')).toEqual({ premium: 3, freemium: 2 });
  });
  it.each(['2:1', '2:1:2:1', 'a:b:c', '-1:1:1', '1.5:1:1', '', '0:0:0'])(
    'rejects reference %j naming the flag',
    (s) => {
      try {
        parseRoleVector(s, '--reference');
        expect.unreachable();
      } catch (err) {
        expect(isPlbError(err, 'BAD_INPUT')).toBe(true);
        expect((err as Error).message).toMatch(/^--reference /);
      }
    },
  );
  it('rejects a bad partition naming the flag', () => {
    expect(() => parsePartition('3:2:1')).toThrow(/^--partition /);
    expect(() => parsePartition('0:0', '--split')).toThrow(/^--split /);
  });
});

describe('partitionFor', () => {
  it('uses the partition as given when it sums to K', () => {
    expect(partitionFor(5)).toEqual({ premium: 3, freemium: 2 });
    expect(partitionFor(5, { premium: 4, freemium: 1 })).toEqual({ premium: 4, freemium: 1 });
  });
  it('scales for other K with one replica per class at least', () => {
    expect(partitionFor(10)).toEqual({ premium: 6, freemium: 4 });
    expect(partitionFor(2)).toEqual({ premium: 1, freemium: 1 });
    expect(partitionFor(1)).toEqual({ premium: 1, freemium: 0 });
    expect(partitionFor(20, { premium: 1, freemium: 99 })).toEqual({ premium: 1, freemium: 19 });
  });
});
