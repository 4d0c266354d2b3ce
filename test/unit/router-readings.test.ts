import { parseReadings } from '../../src/cli/router-values.js';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { isPlbError } from '../../src/core/errors.js';
import {
  canonicalRole,
  chooseRepairDonor,
  countRoles,
  createRouter,
  DEFAULT_READINGS,
  formatReadings,
  fullReference,
  READING_CHOICES,
  rebalanceSteps,
  repairTarget,
  repairToTarget,
  resolveBorrowing,
  resolveReadings,
  targetRoleTable,
  type PlbReadings,
  type PlbReplicaView,
  type Role,
  type RoleVector,
  type Router,
} from '../../src/router/index.js';

const v = (premium: number, mixed: number, freemium: number): RoleVector => ({ premium, mixed, freemium });
const view = (index: number, role: Role, premium = 0, freemium = 0, extra: Partial<PlbReplicaView> = {}) =>
  ({ index, healthy: true, role, weight: 1, sessions: { premium, freemium }, ...extra }) as PlbReplicaView;
const ids5 = ['r1', 'r2', 'r3', 'r4', 'r5'];
const layout = (r: Router) => r.snapshot().map((s) => (s.healthy ? s.role[0]!.toUpperCase() : '-'));
const counts = (r: Router) => countRoles(r.snapshot().map((s, index) => ({ ...s, index })));
const badInput = (f: () => unknown): string => {
  try {
    f();
  } catch (err) {
    expect(isPlbError(err, 'BAD_INPUT')).toBe(true);
    return (err as Error).message;
  }
  throw new Error('no error');
};

describe('parseReadings', () => {
  it('takes a preset, key=value pairs over the defaults, or a preset with overrides', () => {
    // The default is the paper read literally (docs/paper.md: the readings decision).
    expect(parseReadings('paper')).toEqual(DEFAULT_READINGS);
    expect(parseReadings('plb')).toEqual({
      donors: 'above-target',
      canonicalize: 'borrowed',
      reference: 'literal',
      repair: 'target',
      hold: 'none',
      floors: 'mixed',
      lend: 'always',
      reclaim: 'none',
    });
    expect(parseReadings('paper')).toEqual({
      donors: 'mixed-first',
      canonicalize: 'all',
      reference: 'literal',
      repair: 'target',
      hold: 'none',
      floors: 'classes',
      lend: 'normal',
      reclaim: 'none',
    });
    expect(parseReadings('plb,donors=mixed-first, canonicalize=all, floors=classes, lend=normal')).toEqual(
      parseReadings('paper'),
    );
    expect(parseReadings('paper,repair=none')).toEqual({ ...parseReadings('paper'), repair: 'none' });
    expect(parseReadings('reference=floored')).toEqual({ ...DEFAULT_READINGS, reference: 'floored' });
  });

  it('rejects bad input in one line naming the flag, the bad key or value and the allowed ones', () => {
    expect(badInput(() => parseReadings('papr'))).toBe(
      "--readings: unknown preset 'papr' (presets: plb, paper; or key=value with donors, canonicalize, reference, repair, hold, floors, lend, reclaim)",
    );
    expect(badInput(() => parseReadings('donor=mixed-first'))).toBe(
      "--readings: unknown reading 'donor' (readings: donors, canonicalize, reference, repair, hold, floors, lend, reclaim; presets: plb, paper)",
    );
    expect(badInput(() => parseReadings('repair=half', '--x'))).toBe(
      "--x: repair must be target or none or shared, got 'half'",
    );
    expect(badInput(() => parseReadings('donors=mixed-first,paper'))).toMatch(
      /^--readings: the preset 'paper' must come first/,
    );
    expect(badInput(() => parseReadings('repair=none,repair=target'))).toMatch(/repair given twice/);
    expect(badInput(() => parseReadings(''))).toMatch(/^--readings: expected a preset/);
    expect(badInput(() => parseReadings('toString'))).toMatch(/unknown preset 'toString'/);
    for (const s of ['plb', 'paper', 'donors=mixed-first,repair=shared'])
      expect(parseReadings(s)).toBeTruthy();
  });

  it('checks a direct caller: resolveReadings and createRouter', () => {
    expect(resolveReadings({ repair: 'shared' })).toEqual({ ...DEFAULT_READINGS, repair: 'shared' });
    expect(badInput(() => resolveReadings({ donors: 'x' as never }))).toMatch(/^readings: donors must be/);
    expect(
      badInput(() => createRouter({ strategy: 'plb', replicas: ids5, readings: { repair: 'x' as never } })),
    ).toMatch(/^readings: repair must be target or none or shared/);
  });

  it('formats on one line, with the borrowing thresholds', () => {
    expect(formatReadings(parseReadings('plb'), resolveBorrowing(undefined))).toBe(
      'donors=above-target canonicalize=borrowed reference=literal repair=target; borrow 1.5:2',
    );
    expect(formatReadings(parseReadings('paper'), resolveBorrowing(false))).toBe(
      'donors=mixed-first canonicalize=all reference=literal repair=target floors=classes lend=normal; borrow off',
    );
    expect(formatReadings(DEFAULT_READINGS)).not.toContain(';');
  });
});

describe('reference reading', () => {
  it('literal: a reference that sums to K is used as given at K+=K, floors only below K', () => {
    expect(fullReference(5, v(3, 0, 2))).toEqual(v(3, 0, 2));
    expect(targetRoleTable(5, v(3, 0, 2)).slice(0, 2)).toEqual([
      { survivors: 5, ...v(3, 0, 2) },
      { survivors: 4, ...v(2, 1, 1) },
    ]);
    expect(fullReference(3, v(1, 1, 1))).toEqual(v(1, 1, 1)); // not the fixed 2:0:1 of K+=3
  });
  it('floored: the reference goes through the floor rules too (the old behaviour)', () => {
    expect(fullReference(5, v(3, 0, 2), 'floored')).toEqual(v(3, 1, 1));
    expect(targetRoleTable(5, v(3, 0, 2), 'floored')[0]).toEqual({ survivors: 5, ...v(3, 1, 1) });
  });
  it('a reference that does not sum to K is scaled the same way under both', () => {
    for (const reading of ['literal', 'floored'] as const) {
      expect(fullReference(10, v(2, 1, 2), reading)).toEqual(v(4, 2, 4));
      expect(fullReference(10, v(3, 0, 2), reading)).toEqual(v(6, 1, 3));
    }
  });
  it('the router starts from, and returns to, the literal reference', () => {
    const r = createRouter({
      strategy: 'plb',
      replicas: ids5,
      reference: v(3, 0, 2),
      readings: parseReadings('plb'),
    });
    expect(layout(r)).toEqual(['P', 'P', 'P', 'F', 'F']);
    r.markDown('r5', 1);
    expect(counts(r)).toEqual(v(2, 1, 1));
    r.markUp('r5', 2);
    expect(counts(r)).toEqual(v(3, 0, 2));
    const floored = createRouter({
      strategy: 'plb',
      replicas: ids5,
      reference: v(3, 0, 2),
      readings: parseReadings('plb,reference=floored'),
    });
    expect(layout(floored)).toEqual(['P', 'P', 'P', 'M', 'F']);
  });
});

describe('donors reading', () => {
  const target = v(2, 1, 1);
  // The paper's cascade after r1 (premium) went down: premium is one short.
  const afterR1 = [
    view(0, 'premium', 0, 0, { healthy: false }),
    view(1, 'premium', 3),
    view(2, 'mixed', 2, 6),
    view(3, 'freemium', 0, 5),
    view(4, 'freemium', 0, 4),
  ];
  it('above-target: a freemium replica above target goes straight to premium', () => {
    expect(repairToTarget(afterR1, target)).toEqual([{ index: 4, from: 'freemium', to: 'premium' }]);
  });
  it('mixed-first: the mixed replica goes to premium, and a freemium replica refills mixed', () => {
    expect(chooseRepairDonor(afterR1, 'premium', countRoles(afterR1), target, 'mixed-first')?.index).toBe(2);
    expect(repairToTarget(afterR1, target, 'mixed-first')).toEqual([
      { index: 2, from: 'mixed', to: 'premium' },
      { index: 4, from: 'freemium', to: 'mixed' },
    ]);
  });
  it('mixed-first never takes premium or freemium at their target, and refills mixed only from above', () => {
    const views = [view(0, 'premium', 5), view(1, 'mixed', 1, 1), view(2, 'freemium', 0, 0)];
    const at = v(1, 1, 1);
    expect(chooseRepairDonor(views, 'mixed', countRoles(views), at, 'mixed-first')).toBeUndefined();
    expect(repairToTarget(views, at, 'mixed-first')).toEqual([]);
  });

  const layoutArb = fc
    .array(
      fc.record({
        role: fc.constantFrom<Role>('premium', 'mixed', 'freemium'),
        healthy: fc.boolean(),
        premium: fc.nat(6),
        freemium: fc.nat(6),
        weight: fc.constantFrom(1, 2, 3),
      }),
      { minLength: 1, maxLength: 12 },
    )
    .chain((rs) => {
      const views = rs.map((r, index) => view(index, r.role, r.premium, r.freemium, r));
      const n = views.filter((x) => x.healthy).length;
      // Any target that sums to the healthy count (floors or not).
      const targetArb = fc
        .tuple(fc.nat(n), fc.nat(n))
        .map(([a, b]) => [Math.min(a, b), Math.max(a, b)] as const)
        .map(([a, b]) => v(a, b - a, n - b));
      return fc.tuple(fc.constant(views), targetArb);
    });

  for (const donors of READING_CHOICES.donors) {
    it(`${donors}: repair ends at the target in a bounded number of moves, floors protected (random layouts)`, () => {
      fc.assert(
        fc.property(layoutArb, ([views, target]) => {
          const moves = repairToTarget(views, target, donors);
          const now = countRoles(views);
          const short = (['premium', 'mixed', 'freemium'] as const).reduce(
            (a, r) => a + Math.max(0, target[r] - now[r]),
            0,
          );
          const roles = views.map((x) => x.role);
          for (const m of moves) {
            expect(views[m.index]!.healthy).toBe(true);
            expect(m.from).toBe(roles[m.index]);
            expect(now[m.to]).toBeLessThan(target[m.to]); // only into a role below target
            // Premium and freemium give only from above target; mixed too unless mixed-first.
            if (m.from !== 'mixed' || donors === 'above-target' || m.to === 'mixed')
              expect(now[m.from]).toBeGreaterThan(target[m.from]);
            now[m.from] -= 1;
            now[m.to] += 1;
            roles[m.index] = m.to;
          }
          expect(now).toEqual(target);
          if (donors === 'above-target') expect(moves).toHaveLength(short);
          else expect(moves.length).toBeLessThanOrEqual(2 * short);
        }),
        { numRuns: 500 },
      );
    });
  }
});

describe('canonicalize reading', () => {
  it('all: every healthy replica by the classes it carries; an idle one keeps its role', () => {
    expect(canonicalRole(view(0, 'premium', 3, 4), 'all')).toBe('mixed');
    expect(canonicalRole(view(0, 'mixed', 3, 0), 'all')).toBe('premium');
    expect(canonicalRole(view(0, 'premium', 0, 2), 'all')).toBe('freemium');
    expect(canonicalRole(view(0, 'freemium', 0, 0), 'all')).toBe('freemium');
    expect(canonicalRole(view(0, 'freemium', 2, 0, { borrowedBy: 'premium' }), 'all')).toBe('premium');
  });

  // After a repair at K+=4 (target 2:1:1) that moved a mixed replica carrying freemium sessions to
  // premium: the next repair at the same K+ (another event, no admissions in between).
  const repaired = [
    view(0, 'premium', 0, 0, { healthy: false }),
    view(1, 'premium', 3),
    view(2, 'premium', 2, 6), // was mixed; its freemium sessions stay pinned
    view(3, 'mixed', 0, 5), // was freemium
    view(4, 'freemium', 0, 4),
  ];
  const target = v(2, 1, 1);
  it('borrowed: a repaired layout stays put (nothing is borrowed, so nothing to canonicalize)', () => {
    for (const donors of READING_CHOICES.donors)
      expect(rebalanceSteps(repaired, target, { canonicalize: 'borrowed', donors })).toEqual([]);
  });
  it('all: the pinned sessions undo the repair, and repair moves the roles again', () => {
    const steps = rebalanceSteps(repaired, target, { canonicalize: 'all', donors: 'mixed-first' });
    expect(steps).toEqual([
      { index: 2, from: 'premium', to: 'mixed', reason: 'canonicalize' },
      { index: 3, from: 'mixed', to: 'freemium', reason: 'canonicalize' },
      { index: 2, from: 'mixed', to: 'premium', reason: 'repair' },
      { index: 4, from: 'freemium', to: 'mixed', reason: 'repair' },
    ]);
  });
  it('borrowed can undo a repair only through borrowing in between (random layouts: repeated repair is still)', () => {
    fc.assert(
      fc.property(
        fc.array(fc.tuple(fc.constantFrom<Role>('premium', 'mixed', 'freemium'), fc.nat(5), fc.nat(5)), {
          minLength: 1,
          maxLength: 9,
        }),
        fc.constantFrom(...READING_CHOICES.donors),
        (rs, donors) => {
          const views = rs.map(([role, p, f], i) => view(i, role, p, f));
          const n = views.length;
          const target = fullReference(n);
          const readings = { canonicalize: 'borrowed' as const, donors };
          const once = views.map((x) => ({ ...x }));
          for (const s of rebalanceSteps(once, target, readings)) once[s.index]!.role = s.to;
          expect(rebalanceSteps(once, target, readings)).toEqual([]);
        },
      ),
      { numRuns: 300 },
    );
  });
  it('all: a flapping replica makes roles flip at every event while old sessions stay, then they settle', () => {
    const r = createRouter({
      strategy: 'plb',
      replicas: ids5,
      readings: parseReadings('paper,floors=mixed'),
      borrowing: false,
    });
    for (let i = 0; i < 20; i++) r.admit(i % 4 === 0 ? 'premium' : 'freemium', 0);
    r.markDown('r1', 1);
    r.drainChanges();
    const flips = () => {
      r.markUp('r1', 2);
      r.markDown('r1', 3);
      return r.drainChanges().filter((c) => c.reason === 'canonicalize').length;
    };
    expect(flips()).toBeGreaterThan(0);
    expect(flips()).toBeGreaterThan(0); // again: the same pinned sessions, the same flips
    for (const s of r.snapshot()) {
      for (let i = 0; i < s.sessions.premium; i++) r.release(s.id, 'premium', 4);
      for (let i = 0; i < s.sessions.freemium; i++) r.release(s.id, 'freemium', 4);
    }
    flips(); // the first event after the drain may still settle roles repaired earlier
    expect(flips()).toBe(0);
    const plb = createRouter({
      strategy: 'plb',
      replicas: ids5,
      borrowing: false,
      readings: parseReadings('plb'),
    });
    for (let i = 0; i < 20; i++) plb.admit(i % 4 === 0 ? 'premium' : 'freemium', 0);
    plb.markDown('r1', 1);
    plb.markUp('r1', 2);
    plb.drainChanges();
    plb.markDown('r1', 3);
    plb.markUp('r1', 4);
    expect(plb.drainChanges().filter((c) => c.reason === 'canonicalize')).toEqual([]);
  });
});

describe('repair reading', () => {
  it('none: the surviving roles are kept and a rejoining replica gets its old role back', () => {
    const r = createRouter({
      strategy: 'plb',
      replicas: ids5,
      readings: { repair: 'none' },
      borrowing: false,
    });
    r.markDown('r1', 1);
    r.markDown('r2', 2);
    expect(layout(r)).toEqual(['-', '-', 'M', 'F', 'F']);
    r.markDown('r3', 3); // premium has no replica left: the stranded capacity the paper argues against
    expect(() => r.admit('premium', 4)).toThrow(expect.objectContaining({ code: 'NO_REPLICA' }));
    r.markUp('r1', 5);
    expect(layout(r)).toEqual(['P', '-', '-', 'F', 'F']);
    expect(r.drainChanges().map((c) => c.reason)).toEqual(['down', 'down', 'down', 'rejoin']);
    expect(
      repairTarget(4, 5, v(2, 1, 2), { repair: 'none', reference: 'literal', floors: 'mixed' }),
    ).toBeNull();
  });
  it('shared: every healthy replica is mixed from the first fault until all are back', () => {
    const r = createRouter({
      strategy: 'plb',
      replicas: ids5,
      readings: { repair: 'shared' },
      borrowing: false,
    });
    r.markDown('r1', 1);
    expect(layout(r)).toEqual(['-', 'M', 'M', 'M', 'M']);
    r.markDown('r2', 2);
    r.markUp('r1', 3);
    expect(layout(r)).toEqual(['M', '-', 'M', 'M', 'M']);
    r.markUp('r2', 4);
    expect(counts(r)).toEqual(v(2, 1, 2));
    const reasons = new Set(r.drainChanges().map((c) => c.reason));
    expect([...reasons].sort()).toEqual(['down', 'rejoin', 'repair']);
    expect(
      repairTarget(3, 5, v(2, 1, 2), { repair: 'shared', reference: 'literal', floors: 'mixed' }),
    ).toEqual(v(0, 3, 0));
  });
});

describe("the paper's RQ3 cascade (K=5, 2:1:2; r1 down, r2 down, r1 back, r2 back) under each reading", () => {
  /**
   * The layout after each event. loaded: 20 sessions (25:75) before the first fault and 8 more after
   * each event, none ending except those on a replica that goes down; borrowing off.
   */
  const run = (readings: Partial<PlbReadings>, loaded: boolean) => {
    const r = createRouter({ strategy: 'plb', replicas: ids5, readings, borrowing: false });
    const admit = (n: number) => {
      for (let i = 0; i < n; i++) r.admit(i % 4 === 0 ? 'premium' : 'freemium', 0);
    };
    if (loaded) admit(20);
    const rows = [layout(r).join('')];
    for (const [id, up] of [
      ['r1', false],
      ['r2', false],
      ['r1', true],
      ['r2', true],
    ] as const) {
      if (up) r.markUp(id, 1);
      else {
        r.markDown(id, 1);
        const s = r.snapshot().find((x) => x.id === id)!.sessions;
        for (let i = 0; i < s.premium; i++) r.release(id, 'premium', 1);
        for (let i = 0; i < s.freemium; i++) r.release(id, 'freemium', 1);
      }
      rows.push(layout(r).join(''));
      if (loaded) admit(8);
    }
    return rows;
  };
  it.each([
    ['plb', ['PPMFF', '-PMPF', '--PPF', 'M-PPF', 'FMPPF']],
    ['plb,donors=mixed-first', ['PPMFF', '-PPMF', '--PPF', 'M-PPF', 'FMPPF']],
    ['plb,canonicalize=all', ['PPMFF', '-PMPF', '--PPF', 'M-PPF', 'FMPPF']],
    ['plb,reference=floored', ['PPMFF', '-PMPF', '--PPF', 'M-PPF', 'FMPPF']],
    ['plb,repair=none', ['PPMFF', '-PMFF', '--MFF', 'P-MFF', 'PPMFF']],
    ['plb,repair=shared', ['PPMFF', '-MMMM', '--MMM', 'M-MMM', 'PPFFM']],
    ['paper,floors=mixed', ['PPMFF', '-PPMF', '--PPF', 'M-PPF', 'FMPPF']],
    ['paper', ['PPMFF', '-PPFF', '--PPF', 'F-PPF', 'FMPPF']],
    ['plb,floors=classes', ['PPMFF', '-PPFF', '--PPF', 'F-PPF', 'FMPPF']],
  ])('%s, no sessions', (text, rows) => {
    expect(run(parseReadings(text), false)).toEqual(rows);
  });
  it.each([
    ['plb', ['PPMFF', '-PMPF', '--PPF', 'M-PPF', 'FMPPF']],
    ['plb,donors=mixed-first', ['PPMFF', '-PPMF', '--PPF', 'M-PPF', 'FMPPF']],
    ['plb,canonicalize=all', ['PPMFF', '-PPMF', '--PPF', 'P-MPF', 'PPMFF']],
    ['plb,reference=floored', ['PPMFF', '-PMPF', '--PPF', 'M-PPF', 'FMPPF']],
    ['plb,repair=none', ['PPMFF', '-PMFF', '--MFF', 'P-MFF', 'PPMFF']],
    ['plb,repair=shared', ['PPMFF', '-MMMM', '--MMM', 'M-MMM', 'PPMFF']],
    ['paper,floors=mixed', ['PPMFF', '-PPMF', '--PPF', 'P-PMF', 'PPMFF']],
    ['paper', ['PPMFF', '-PPFF', '--PPF', 'P-PFF', 'PPMFF']],
  ])('%s, loaded', (text, rows) => {
    expect(run(parseReadings(text), true)).toEqual(rows);
  });
});
