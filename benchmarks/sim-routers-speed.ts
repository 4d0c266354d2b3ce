// The simulator's CPU with many routers (issue: N = 64 within 2x the CPU of N = 1 at K = 5,
// T = 1000): a child `plb bench run --driver sim` on RQ2 (25:75, think time auto) per N and view,
// its user + system CPU as the child reports it at exit (benchmarks/rss-hook.mjs: its own
// process.resourceUsage, every thread). Prints figures, asserts nothing. N = 1 runs the view given
// only where it differs (replica); local and global at N = 1 are the same run.
//
//   npx tsx benchmarks/sim-routers-speed.ts [--ns 1,4,16,64] [--views local,global,replica]
//     [--repeats 3] [--strategy plb] [--seed 1] [--cpu-prof dir]
// With --cpu-prof every child writes a V8 profile into dir (node --cpu-prof).
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { option } from './lib/args.js';

const ns = (option('ns') ?? '1,4,16,64').split(',').map(Number);
const views = (option('views') ?? 'local,global,replica').split(',');
const repeats = Number(option('repeats') ?? 3);
const strategy = option('strategy') ?? 'plb';
const seed = option('seed') ?? '1';
const prof = option('cpu-prof');

/** CPU seconds (user + system, every thread) of one child run, as the child measured it at exit. */
function cpuOf(n: number, view: string): number {
  const out = mkdtempSync(join(tmpdir(), 'plb-routers-speed-'));
  const usage = join(out, 'usage.json');
  const args = [
    '--import',
    './benchmarks/rss-hook.mjs',
    ...(prof ? ['--cpu-prof', '--cpu-prof-dir', prof] : []),
    'bin/run.js',
    'bench',
    'run',
    '--driver',
    'sim',
    '--plan',
    'plans/paper/rq2.yaml',
    '--strategy',
    strategy,
    '--mix',
    '25:75',
    '--clients',
    '1000',
    '--think-time',
    'auto',
    '--seed',
    seed,
    '--routers',
    String(n),
    ...(n > 1 || view === 'replica' ? ['--router-view', view] : []),
    '--out',
    join(out, 'run'),
    '--progress',
    '0',
  ];
  try {
    const r = spawnSync('node', args, {
      encoding: 'utf8',
      maxBuffer: 64 * 1024 * 1024,
      env: { ...process.env, PLB_RSS_FILE: usage },
    });
    if (r.status !== 0) throw new Error(`plb ${args.join(' ')} exited ${r.status}:\n${r.stderr}`);
    const u = JSON.parse(readFileSync(usage, 'utf8')) as { userUs: number; systemUs: number };
    return (u.userUs + u.systemUs) / 1e6;
  } finally {
    rmSync(out, { recursive: true, force: true });
  }
}

const median = (xs: number[]): number => {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? (s[m] as number) : ((s[m - 1] as number) + (s[m] as number)) / 2;
};

function main(): void {
  const rows: { view: string; n: number; cpu: number[] }[] = [];
  for (const view of views) {
    for (const n of ns) {
      const cpu: number[] = [];
      for (let i = 0; i < repeats; i++) cpu.push(cpuOf(n, view));
      rows.push({ view, n, cpu });
      console.error(`${view} N=${n}: ${cpu.map((c) => c.toFixed(2)).join(' ')} s`);
    }
  }
  console.log(
    `simulator CPU with N routers (${strategy}, RQ2 25:75, K=5, T=1000, seed ${seed}, think time auto; ` +
      `CPU seconds of the child, user + system; median of ${repeats} [min, max])`,
  );
  console.log(`view      N     CPU s (median [min, max])   vs N=1`);
  for (const r of rows) {
    const one = rows.find((x) => x.view === r.view && x.n === 1) ?? rows.find((x) => x.n === 1);
    const ratio = one ? median(r.cpu) / median(one.cpu) : NaN;
    console.log(
      `${r.view.padEnd(9)} ${String(r.n).padStart(2)}    ${median(r.cpu).toFixed(2).padStart(6)} ` +
        `[${Math.min(...r.cpu).toFixed(2)}, ${Math.max(...r.cpu).toFixed(2)}]`.padEnd(20) +
        `   ${ratio.toFixed(2)}x`,
    );
  }
}

main();
