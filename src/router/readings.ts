// The readings of the PLB paper's repair rules (types.ts PlbReadings): names, presets, checks.
import { PlbError } from '../core/errors.js';
import type { BorrowThresholds, PlbReadings } from './types.js';
import type { ServiceClass } from '../core/service-class.js';

/**
 * Each reading and what it means (the paper's section on repair-to-target and canonicalization).
 *
 * donors: a role below target takes a replica from a donor role.
 *   above-target: only a role above its own target donates, Mixed first among those (one move per
 *     missing replica; a role at target is never touched).
 *   mixed-first: "donors from Mixed first", literally: a Mixed replica donates even when Mixed is
 *     at its target, and Mixed is then refilled from a role above target (two moves instead of one;
 *     the replica serving both classes takes the short role, a class replica becomes the shared one).
 *     Premium and freemium are never taken below their target (so never below their floor).
 * canonicalize: before repair, which replicas are re-roled by the classes they carry.
 *   borrowed: only borrowed replicas (the paper's "transient borrowed states").
 *   all: every healthy replica: both classes -> mixed, only premium -> premium, only freemium ->
 *     freemium, no sessions -> its role.
 * reference: the full-capacity split.
 *   literal: a reference that sums to K is used as given at K+=K ("not modified by individual
 *     faults"); the floors apply to the targets at K+<K only.
 *   floored: the reference goes through the same floor rules as a post-fault target (3:0:2 -> 3:1:1).
 *   Either way a reference that does not sum to K is scaled to K with those rules.
 * repair: what a down or rejoin event does to the roles.
 *   target: canonicalize, then repair to the target of the survivors (the paper's policy).
 *   none (ablation): keep the surviving composition; no canonicalization, no repair. A rejoining
 *     replica gets back the role it had when it left, so a full recovery restores the deployment.
 *   shared (ablation): while any replica is down every healthy replica is mixed (a shared pool,
 *     admission still least loaded); once all K are back, repair to the reference resumes.
 * hold: when a borrow or a return happens ("borrowing under pressure ... returns when pressure
 *   subsides" leaves the time scale open).
 *   none: at the first admission that sees its condition (the thresholds' band is the only hysteresis).
 *   dwell: only once the condition has held at every admission of the class for BORROW_DWELL_MS
 *     (borrow-dwell.ts), so a burst of admissions cannot borrow and return the same replica in turn.
 * floors: the floors of the target from K+=4 on ("adjusted to satisfy the active-set budget and the
 *   role floors ... the Mixed role receiving the residual capacity"; the equation is not in the text).
 *   mixed: premium, freemium and mixed >= 1 (2:1:2 at K+=4 -> 2:1:1).
 *   classes: premium and freemium >= 1, mixed the residual, possibly 0 (2:1:2 at K+=4 -> 2:0:2).
 * lend: when a class may borrow ("during normal load variations, replicas may be temporarily
 *   borrowed across roles").
 *   always: in every phase, faults included.
 *   normal: only while every replica is healthy; a fault's repair ends every borrowed state.
 *   Under either reading (and reclaim) a class with no replica of its own may borrow, or it would
 *   be refused outright.
 * reclaim: whether a lender can take its replica back (the paper is silent).
 *   none: a lent replica comes back only by the borrower's return rule.
 *   premium: while premium's pressure (its best own replica's admission key) is at or above its
 *     borrowing minLoad, every premium replica lent to freemium is taken back and freemium borrows
 *     none; freemium never takes back what it lent (premium is the protected class).
 * Borrowing thresholds (--borrow) are the remaining PLB knob, one direction off with '1.5:off';
 * formatReadings shows them alongside.
 */
export const READING_CHOICES: { readonly [K in keyof PlbReadings]: readonly PlbReadings[K][] } = {
  donors: ['above-target', 'mixed-first'],
  canonicalize: ['borrowed', 'all'],
  reference: ['literal', 'floored'],
  repair: ['target', 'none', 'shared'],
  hold: ['none', 'dwell'],
  floors: ['mixed', 'classes'],
  lend: ['always', 'normal'],
  reclaim: ['none', 'premium'],
};

const READING_KEYS = Object.keys(READING_CHOICES) as (keyof PlbReadings)[];

/** Readings added after the first runs, with the value those runs had (absent from their config). */
const LATER_READINGS: Partial<PlbReadings> = {
  hold: 'none',
  floors: 'mixed',
  lend: 'always',
  reclaim: 'none',
};

/** plb's own readings (the default until 2026-12-07): the repair rules it chose, reference literal. */
const PLB_READINGS: Readonly<PlbReadings> = Object.freeze({
  donors: 'above-target',
  canonicalize: 'borrowed',
  reference: 'literal',
  repair: 'target',
  hold: 'none',
  floors: 'mixed',
  lend: 'always',
  reclaim: 'none',
});

/** The paper read literally. */
const PAPER_READINGS: Readonly<PlbReadings> = Object.freeze({
  donors: 'mixed-first',
  canonicalize: 'all',
  reference: 'literal',
  repair: 'target',
  hold: 'none',
  floors: 'classes',
  lend: 'normal',
  reclaim: 'none',
});

export const READING_PRESETS: Readonly<{ plb: PlbReadings; paper: PlbReadings }> = Object.freeze({
  plb: PLB_READINGS,
  paper: PAPER_READINGS,
});

/**
 * The default: the paper read literally. DESIGN's rule: the paper's reading unless a pooled verdict
 * shows another is better; plb's own readings were worse for premium in the freemium-heavy cells
 * (benchmarks/readings-decision.ts; the table is in docs/paper.md).
 */
export const DEFAULT_READINGS: Readonly<PlbReadings> = PAPER_READINGS;

/** DEFAULT_READINGS with `partial` over it, each value checked (a direct caller's options). */
export function resolveReadings(
  partial: Partial<PlbReadings> | undefined,
  field = 'readings',
  base: Readonly<PlbReadings> = DEFAULT_READINGS,
): PlbReadings {
  const out: PlbReadings = { ...base };
  for (const [key, value] of Object.entries(partial ?? {})) {
    if (value === undefined) continue;
    setReading(out, key, String(value), field);
  }
  return out;
}

function setReading(out: PlbReadings, key: string, value: string, field: string): void {
  if (!(READING_KEYS as string[]).includes(key)) {
    throw new PlbError(
      'BAD_INPUT',
      `${field}: unknown reading '${key}' (readings: ${READING_KEYS.join(', ')}; presets: ${presetNames()})`,
    );
  }
  const k = key as keyof PlbReadings;
  const allowed = READING_CHOICES[k] as readonly string[];
  if (!allowed.includes(value)) {
    throw new PlbError('BAD_INPUT', `${field}: ${k} must be ${allowed.join(' or ')}, got '${value}'`);
  }
  (out as unknown as Record<string, string>)[k] = value;
}

function presetNames(): string {
  return Object.keys(READING_PRESETS).join(', ');
}

/**
 * The shortest `--readings` value that gives `readings`: a preset's name, or the nearer preset
 * with the keys that differ ('plb,repair=none'). Reports label runs with it.
 */
export function readingsName(readings: PlbReadings): string {
  let best = '';
  for (const [name, preset] of Object.entries(READING_PRESETS)) {
    const diff = READING_KEYS.filter((k) => preset[k] !== readings[k]).map((k) => `${k}=${readings[k]}`);
    const text = [name, ...diff].join(',');
    if (best === '' || text.length < best.length) best = text;
  }
  return best;
}

/**
 * One line: 'donors=above-target canonicalize=borrowed reference=literal repair=target', and with
 * the resolved borrowing thresholds '; borrow 1.5:2' (premium:freemium pressure ratios) or '; borrow off'.
 */
export function formatReadings(
  readings: PlbReadings,
  borrowing?: Record<ServiceClass, BorrowThresholds>,
): string {
  // Readings added later are shown only when they differ from how runs were made before them.
  const text = READING_KEYS.filter((k) => !(k in LATER_READINGS) || readings[k] !== LATER_READINGS[k])
    .map((k) => `${k}=${readings[k]}`)
    .join(' ');
  if (borrowing === undefined) return text;
  const { premium, freemium } = borrowing;
  const borrow =
    premium.enabled || freemium.enabled
      ? `${premium.enabled ? premium.pressureRatio : 'off'}:${freemium.enabled ? freemium.pressureRatio : 'off'}`
      : 'off';
  return `${text}; borrow ${borrow}`;
}
