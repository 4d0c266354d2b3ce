/**
 * The via-* integration tests' shared run: plb, then `--strategy via` through the balancer under
 * test, on one local cluster and one plan (r2 killed at 10 s, back at 17 s), side by side. Checks
 * what every such run must show (both complete, in order, both in the one table) and hands back
 * the summaries for the balancer's own assertions.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect } from 'vitest';
import { executeBench } from '../../src/bench/execute.js';
import type { RunSummary } from '../../src/run-format/summary.js';
import { benchFlagValues } from './fixtures.js';

export interface ViaRun {
  dirs: string[];
  summaries: RunSummary[];
  /** The via run's summary. */
  via: RunSummary;
  phase(name: string): RunSummary['phases'][number];
}

export async function runPlbThenVia(opts: {
  work: string;
  name: string;
  basePort: number;
  label: string;
  via: string;
  mixes?: string;
  /** What to print beside a failure (the balancer's log). */
  context?: () => string;
}): Promise<ViaRun> {
  const plan = join(opts.work, 'plan.yaml');
  writeFileSync(
    plan,
    [
      `name: via-${opts.label}-it`,
      'duration: 24s',
      'warmup: 4s',
      'reference: 6s',
      'replicas: 5',
      'events:',
      '  - { at: 10s, replica: r2, action: down }',
      '  - { at: 17s, replica: r2, action: rejoin }',
      '',
    ].join('\n'),
  );
  const out: string[] = [];
  const warn: string[] = [];
  const code = await executeBench(
    benchFlagValues(join(opts.work, 'runs'), opts.name, opts.basePort, {
      plan,
      strategies: 'plb,via',
      via: opts.via,
      'via-label': opts.label,
      seed: 7,
      clients: 6,
      ...(opts.mixes !== undefined ? { mixes: opts.mixes } : {}),
      'health-interval': '500ms',
      'hang-timeout': '2s',
    }),
    { log: (l) => out.push(l), warn: (l) => warn.push(l) },
  );
  expect(code, `${warn.join('\n')}\n${opts.context?.() ?? ''}`).toBe(0);
  const dirs = warn.flatMap((l) => /^run directory: (\S+)$/.exec(l)?.[1] ?? []);
  expect(dirs).toHaveLength(2);
  const summaries = dirs.map((d) => JSON.parse(readFileSync(join(d, 'summary.json'), 'utf8')) as RunSummary);
  expect(summaries.map((s) => s.strategy)).toEqual(['plb', `via:${opts.label}`]);
  expect(summaries.every((s) => s.complete)).toBe(true);
  for (const s of summaries)
    console.log(
      `${s.strategy} sessions opened per phase and replica: ${s.phases
        .map(
          (p) =>
            `${p.name} ${Object.values(p.replicas)
              .map((r) => r.sessionsOpened)
              .join('/')}`,
        )
        .join(', ')}`,
    );
  // Side by side: both strategies in the one table.
  const text = out.join('\n');
  expect(text).toContain(`via:${opts.label}`);
  expect(text).toMatch(/plb/);
  const via = summaries[1] as RunSummary;
  return { dirs, summaries, via, phase: (name) => via.phases.find((p) => p.name === name)! };
}
