// The simulator against the real cluster: the same plan, seed, clients and strategies on the
// Docker cluster and in `--driver sim`; per phase and class, p95 and goodput side by side with
// their ratio (sim / real), and whether the premium p95 ranking of the strategies agrees in every
// down phase. Targets (issue 10): p95 within ±30 %, goodput within ±10 %.
//
// Run (builds nothing; `npm run build` first):
//   node --import tsx benchmarks/sim-vs-real.ts --plan plans/demo-cascade.yaml --clients 32 \
//     --seed 7 --strategy plb,rr,static [--think-time 250ms] [--real DIR] [--sim DIR] [-- extra bench flags]
// --real/--sim reuse run directories already made (each holding one run per strategy).
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Table from 'cli-table3';
import type { RunSummary } from '../src/run-format/summary.js';

const P95_TOLERANCE = 0.3;
const GOODPUT_TOLERANCE = 0.1;

const argv = process.argv.slice(2);
const dash = argv.indexOf('--');
const own = dash >= 0 ? argv.slice(0, dash) : argv;
const extra = dash >= 0 ? argv.slice(dash + 1) : [];
const arg = (name: string, fallback?: string): string | undefined => {
  const i = own.indexOf(`--${name}`);
  return i >= 0 ? own[i + 1] : fallback;
};
const plan = arg('plan', 'plans/demo-cascade.yaml') as string;
const clients = arg('clients', '32') as string;
const seed = arg('seed', '7') as string;
const strategy = arg('strategy', 'plb,rr,static') as string;
const think = arg('think-time');

function bench(driver: 'docker' | 'sim'): { dir: string; wallS: number } {
  const out = mkdtempSync(join(tmpdir(), `plb-${driver}-`));
  const args = [
    'bin/run.js',
    'bench',
    'run',
    '--driver',
    driver,
    '--plan',
    plan,
    '--clients',
    clients,
    '--seed',
    seed,
    '--strategy',
    strategy,
    '--out',
    out,
    ...(think ? ['--think-time', think] : []),
    ...extra,
  ];
  process.stderr.write(`$ node ${args.join(' ')}\n`);
  const t0 = Date.now();
  const r = spawnSync('node', args, { stdio: ['ignore', 'ignore', 'inherit'] });
  if (r.status !== 0) throw new Error(`plb bench run --driver ${driver} exited ${r.status}`);
  return { dir: out, wallS: (Date.now() - t0) / 1000 };
}

function summaries(dir: string): Map<string, RunSummary> {
  const out = new Map<string, RunSummary>();
  for (const name of readdirSync(dir)) {
    const f = join(dir, name, 'summary.json');
    if (!existsSync(f)) continue;
    const s = JSON.parse(readFileSync(f, 'utf8')) as RunSummary;
    out.set(s.strategy, s);
  }
  return out;
}

const realDir = arg('real') ?? bench('docker').dir;
const simRun = arg('sim') ? { dir: arg('sim') as string, wallS: NaN } : bench('sim');
const real = summaries(realDir);
const sim = summaries(simRun.dir);

const ratio = (s: number | null, r: number | null): number | null =>
  s === null || r === null || r === 0 ? null : s / r;
const pct = (x: number | null): string =>
  x === null ? '-' : `${x >= 1 ? '+' : ''}${((x - 1) * 100).toFixed(0)}%`;
const fmt = (x: number | null, d = 1): string => (x === null ? '-' : x.toFixed(d));

const table = new Table({
  head: ['strategy', 'phase', 'class', 'p95 real', 'p95 sim', 'sim/real', 'q/s real', 'q/s sim', 'sim/real'],
  style: { head: [], border: [] },
});
let cells = 0;
let p95Ok = 0;
let goodputOk = 0;
for (const [name, r] of real) {
  const s = sim.get(name);
  if (!s) continue;
  for (const ph of r.phases) {
    const sp = s.phases.find((p) => p.name === ph.name);
    if (!sp) continue;
    for (const cls of ['premium', 'freemium'] as const) {
      const a = ph.classes[cls];
      const b = sp.classes[cls];
      const rp = ratio(b.p95, a.p95);
      const rg = ratio(b.goodput, a.goodput);
      cells++;
      if (rp !== null && Math.abs(rp - 1) <= P95_TOLERANCE) p95Ok++;
      if (rg !== null && Math.abs(rg - 1) <= GOODPUT_TOLERANCE) goodputOk++;
      table.push([
        name,
        ph.name,
        cls,
        fmt(a.p95),
        fmt(b.p95),
        pct(rp),
        fmt(a.goodput),
        fmt(b.goodput),
        pct(rg),
      ]);
    }
  }
}
process.stdout.write(`${table.toString()}\n`);
process.stdout.write(
  `cells: ${cells}; p95 within ±${P95_TOLERANCE * 100}%: ${p95Ok}; goodput within ±${GOODPUT_TOLERANCE * 100}%: ${goodputOk}\n`,
);

// Ranking of strategies by premium p95, per down phase (K+ below the plan's K).
const names = [...real.keys()].filter((n) => sim.has(n));
const first = real.get(names[0] ?? '');
for (const ph of first?.phases ?? []) {
  if (!ph.name.startsWith('down')) continue;
  const rank = (m: Map<string, RunSummary>): string =>
    [...names]
      .map((n) => ({
        n,
        p: m.get(n)?.phases.find((p) => p.name === ph.name)?.classes.premium.p95 ?? Infinity,
      }))
      .sort((a, b) => a.p - b.p)
      .map((x) => x.n)
      .join(' < ');
  const a = rank(real);
  const b = rank(sim);
  process.stdout.write(
    `${ph.name} premium p95 ranking: real ${a}; sim ${b}: ${a === b ? 'same' : 'DIFFERENT'}\n`,
  );
}
process.stdout.write(
  `real runs: ${realDir}\nsim runs: ${simRun.dir}${Number.isNaN(simRun.wallS) ? '' : ` (wall ${simRun.wallS.toFixed(1)} s)`}\n`,
);
