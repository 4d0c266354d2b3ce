// The simulator's side of a comparison with real runs already made (--real): priced like them.
// A real run made with --think-time auto measured beside itself what a query and a connect cost
// (config.json `calibration`); `--calibration <that run>` prices the shipped calibration so, and
// the runs' own think time gives the simulator the same load (docs/simulator.md, 2026-12-07).
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

interface RunConfig {
  calibration?: { cpuPerQueryMs?: number };
  workload?: { classes: Record<'premium' | 'freemium', { thinkTimeMs: number }> };
}

/** Flags for `plb bench --driver sim` from the first run under `dirs` that measured its costs. */
export function pricedLike(dirs: string[], withThinkTime: boolean): { flags: string[]; run: string } | null {
  for (const dir of dirs) {
    const runs = [dir, ...(existsSync(dir) ? readdirSync(dir).map((d) => join(dir, d)) : [])];
    for (const run of runs) {
      const file = join(run, 'config.json');
      if (!existsSync(file)) continue;
      const c = JSON.parse(readFileSync(file, 'utf8')) as RunConfig;
      if (!(typeof c.calibration?.cpuPerQueryMs === 'number') || !c.workload) continue;
      const t = c.workload.classes;
      const think = `premium=${t.premium.thinkTimeMs}ms,freemium=${t.freemium.thinkTimeMs}ms`;
      return { flags: ['--calibration', run, ...(withThinkTime ? ['--think-time', think] : [])], run };
    }
  }
  return null;
}
