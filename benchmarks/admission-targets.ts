// The admission targets of a series (issue: priority admission), read from its run directories:
// per strategy and mix, over the repeats (median and min..max), premium p95 / its own ref in every
// down and rejoin phase, freemium goodput in down-2 / ref, freemium goodput in the last 10 s of the
// run / ref, queue p95 and timeouts, and the recovery tail. Prints figures; asserts nothing.
//
//   node --import tsx benchmarks/admission-targets.ts <series-out-dir> [label]
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

interface ClassStats {
  p95: number;
  goodput: number;
  queueP95Ms?: number | null;
  queueTimeouts?: number;
  admissionFailures: number;
}
interface Summary {
  strategy: string;
  mix: { premium: number; freemium: number };
  phases: {
    name: string;
    startS: number;
    endS: number;
    classes: Record<'premium' | 'freemium', ClassStats>;
  }[];
  recoveryTail?: { phase: string; premiumS: number | null; freemiumS: number | null }[];
}

const [dir, label = ''] = process.argv.slice(2);
if (!dir) {
  console.error('usage: admission-targets.ts <series-out-dir> [label]');
  process.exit(1);
}

function lastSecondsGoodput(run: string, cls: string, seconds: number): number | null {
  const file = join(run, 'timeline.csv');
  if (!existsSync(file)) return null;
  const lines = readFileSync(file, 'utf8').trim().split('\n');
  const head = (lines[0] ?? '').split(',');
  const col = head.indexOf(`${cls}_goodput`);
  const rows = lines.slice(1).map((l) => l.split(','));
  const tail = rows.slice(-seconds - 1, -1); // the last row can be a partial second
  if (col < 0 || tail.length === 0) return null;
  return tail.reduce((s, r) => s + Number(r[col]), 0) / tail.length;
}

const groups = new Map<string, { s: Summary; run: string }[]>();
for (const name of readdirSync(dir)) {
  const f = join(dir, name, 'summary.json');
  if (!existsSync(f)) continue;
  const s = JSON.parse(readFileSync(f, 'utf8')) as Summary;
  const key = `${s.strategy} ${s.mix.premium}:${s.mix.freemium}`;
  groups.set(key, [...(groups.get(key) ?? []), { s, run: join(dir, name) }]);
}

const med = (xs: number[]): number => {
  const v = [...xs].sort((a, b) => a - b);
  const m = v.length >> 1;
  return v.length % 2 ? (v[m] as number) : ((v[m - 1] as number) + (v[m] as number)) / 2;
};
const fmt = (xs: (number | null)[], digits = 2): string => {
  const v = xs.filter((x): x is number => x !== null && Number.isFinite(x));
  if (v.length === 0) return '-';
  if (v.length === 1) return (v[0] as number).toFixed(digits);
  return `${med(v).toFixed(digits)} [${Math.min(...v).toFixed(digits)}..${Math.max(...v).toFixed(digits)}]`;
};

for (const [key, runs] of [...groups].sort()) {
  const phaseNames = (runs[0]?.s.phases ?? [])
    .map((p) => p.name)
    .filter((n) => n.startsWith('down') || n.startsWith('rejoin'));
  const ratio = (phase: string, cls: 'premium' | 'freemium', what: 'p95' | 'goodput') =>
    runs.map(({ s }) => {
      const ref = s.phases.find((p) => p.name === 'ref')?.classes[cls][what];
      const ph = s.phases.find((p) => p.name === phase)?.classes[cls][what];
      return ref && ph !== undefined ? ph / ref : null;
    });
  console.log(`${label}${label ? ' ' : ''}${key} (${runs.length} runs; median [min..max])`);
  for (const ph of phaseNames) {
    const worst = (cls: 'premium' | 'freemium') =>
      fmt(
        runs.map(({ s }) => s.phases.find((p) => p.name === ph)?.classes[cls].queueP95Ms ?? null),
        0,
      );
    const timeouts = (cls: 'premium' | 'freemium') =>
      fmt(
        runs.map(({ s }) => s.phases.find((p) => p.name === ph)?.classes[cls].queueTimeouts ?? null),
        0,
      );
    console.log(
      `  ${ph.padEnd(9)} premium p95/ref ${fmt(ratio(ph, 'premium', 'p95'))}  freemium goodput/ref ${fmt(ratio(ph, 'freemium', 'goodput'))}  premium goodput/ref ${fmt(ratio(ph, 'premium', 'goodput'))}  queue p95 ms P ${worst('premium')} F ${worst('freemium')}  timeouts P ${timeouts('premium')} F ${timeouts('freemium')}`,
    );
  }
  const endF = runs.map(({ s, run }) => {
    const ref = s.phases.find((p) => p.name === 'ref')?.classes.freemium.goodput;
    const g = lastSecondsGoodput(run, 'freemium', 10);
    return ref && g !== null ? g / ref : null;
  });
  console.log(`  freemium goodput in the last 10 s / ref ${fmt(endF)}`);
  for (const t of runs[0]?.s.recoveryTail ?? []) {
    const tails = (cls: 'premiumS' | 'freemiumS') =>
      fmt(
        runs.map(({ s }) => s.recoveryTail?.find((x) => x.phase === t.phase)?.[cls] ?? null),
        0,
      );
    console.log(
      `  recovery tail after ${t.phase} (s): premium ${tails('premiumS')} freemium ${tails('freemiumS')}`,
    );
  }
}
