// The lend and reclaim readings and one-way borrowing, on the router itself (the property tests
// hold the router to decidePlbAdmission under every reading; these say what the readings mean).
import { describe, expect, it } from 'vitest';
import {
  createRouter,
  READING_PRESETS,
  type PlbReadings,
  type RoleChange,
  type Router,
} from '../../src/router/index.js';
import type { ServiceClass } from '../../src/core/service-class.js';

const ids5 = ['r1', 'r2', 'r3', 'r4', 'r5'];

function plb(
  readings: Partial<PlbReadings>,
  borrowing?: Parameters<typeof createRouter>[0]['borrowing'],
): Router {
  return createRouter({
    strategy: 'plb',
    replicas: ids5,
    slowStartMs: 0,
    readings: { ...READING_PRESETS.plb, ...readings }, // over plb's, so only these readings differ
    ...(borrowing !== undefined ? { borrowing } : {}),
  });
}

function admitMany(r: Router, cls: ServiceClass, n: number, now = 0): RoleChange[] {
  for (let i = 0; i < n; i++) r.admit(cls, now);
  return r.drainChanges();
}

const lentTo = (r: Router, cls: ServiceClass) =>
  r
    .snapshot()
    .filter((s) => s.borrowedBy === cls)
    .map((s) => s.id);

describe('lend: when replicas may be borrowed', () => {
  it('always: premium under pressure borrows a freemium replica while a replica is down', () => {
    const r = plb({ lend: 'always' });
    r.markDown('r5', 0);
    r.drainChanges();
    expect(admitMany(r, 'premium', 40).some((c) => c.reason === 'borrow')).toBe(true);
  });
  it('normal: no borrowing while a replica is down; borrowing again once every replica is back', () => {
    const r = plb({ lend: 'normal' });
    r.markDown('r5', 0);
    r.drainChanges();
    expect(admitMany(r, 'premium', 40).filter((c) => c.reason === 'borrow')).toEqual([]);
    expect(admitMany(r, 'freemium', 40).filter((c) => c.reason === 'borrow')).toEqual([]);
    r.markUp('r5', 1);
    r.drainChanges();
    expect(admitMany(r, 'premium', 40, 2).some((c) => c.reason === 'borrow')).toBe(true);
  });
  it('normal: a fault ends every borrowed state (canonicalization at the repair)', () => {
    const r = plb({ lend: 'normal' });
    admitMany(r, 'premium', 40);
    expect(lentTo(r, 'premium').length).toBeGreaterThan(0);
    r.markDown('r1', 1);
    expect(lentTo(r, 'premium')).toEqual([]);
  });
});

describe('reclaim: premium takes back a replica it lent', () => {
  /** Freemium loads its replicas until it borrows a premium one; returns the borrowed ids. */
  const freemiumBorrows = (r: Router): string[] => {
    for (let i = 0; i < 60 && lentTo(r, 'freemium').length === 0; i++) r.admit('freemium', 0);
    r.drainChanges();
    return lentTo(r, 'freemium');
  };

  it('premium: once premium is under pressure the lent replica comes back, and freemium borrows no more', () => {
    const r = plb({ reclaim: 'premium' });
    expect(freemiumBorrows(r).length).toBeGreaterThan(0);
    const changes = admitMany(r, 'premium', 30);
    const reclaimed = changes.filter((c) => c.reason === 'reclaim');
    expect(reclaimed.length).toBeGreaterThan(0);
    for (const c of reclaimed)
      expect([c.from, c.to, c.borrowedBy]).toEqual(['premium', 'premium', undefined]);
    expect(lentTo(r, 'freemium')).toEqual([]);
    // Premium still pressed: a freemium burst borrows nothing of premium's.
    expect(admitMany(r, 'freemium', 60).filter((c) => c.reason === 'borrow')).toEqual([]);
    expect(lentTo(r, 'freemium')).toEqual([]);
  });
  it('none: a lent replica comes back only by the borrower returning it', () => {
    const r = plb({ reclaim: 'none' });
    expect(freemiumBorrows(r).length).toBeGreaterThan(0);
    const changes = [...admitMany(r, 'premium', 30), ...admitMany(r, 'freemium', 60)];
    expect(changes.filter((c) => c.reason === 'reclaim')).toEqual([]);
  });
});

describe('one-way borrowing', () => {
  it('premium only (1.5:off): freemium never borrows, premium does', () => {
    const r = plb({}, { freemium: { enabled: false } });
    expect(admitMany(r, 'freemium', 80).filter((c) => c.reason === 'borrow')).toEqual([]);
    const r2 = plb({}, { freemium: { enabled: false } });
    expect(admitMany(r2, 'premium', 40).some((c) => c.reason === 'borrow')).toBe(true);
  });
});
