import { existsSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { PlbError } from '../../core/errors.js';
import { configSchema } from '../../run-format/config.js';
import { chargedCosts, type SimCalibration } from './calibration.js';

/** A run directory (or its config.json) rather than a calibration file. */
export function isRunCalibration(path: string): boolean {
  if (path.endsWith('config.json')) return true;
  return existsSync(path) && statSync(path).isDirectory();
}

/**
 * The simulator priced like the cluster a real run measured: `base` (the shipped calibration) with
 * every CPU cost scaled so that a query of the run's mix and a connect cost what the run's own
 * measurement at load found (config.json `calibration`, recorded by `--think-time auto`). The same
 * kind of host measured a scan at 11.6 to 31.2 ms on different days (docs/simulator.md), so a run
 * is only reproduced in the simulator at the costs measured beside it. The postmaster's fork scales
 * with the connect, the health check with the query; times that are not CPU stay as they are.
 */
export function calibrationFromRun(path: string, base: SimCalibration): SimCalibration {
  const file = path.endsWith('config.json') ? path : join(path, 'config.json');
  let raw: unknown;
  try {
    raw = JSON.parse(readFileSync(file, 'utf8'));
  } catch (err) {
    throw new PlbError('BAD_INPUT', `calibration ${path}: not a run directory (no readable config.json)`, {
      cause: err,
      hint: 'give a calibration file (plb calibrate --out <file>) or a real run made with --think-time auto',
    });
  }
  const parsed = configSchema.safeParse(raw);
  const config = parsed.success ? parsed.data : undefined;
  const measured = config?.calibration as { cpuPerQueryMs?: unknown; cpuPerConnectMs?: unknown } | undefined;
  const q = measured?.cpuPerQueryMs;
  const c = measured?.cpuPerConnectMs;
  if (config?.driver === 'sim')
    throw new PlbError(
      'BAD_INPUT',
      `calibration ${path}: a simulated run; its calibration is simCalibration.path`,
    );
  if (typeof q !== 'number' || !(q > 0) || typeof c !== 'number' || !(c > 0) || !config?.workload)
    throw new PlbError(
      'BAD_INPUT',
      `calibration ${path}: the run measured no costs (config.json has no calibration.cpuPerQueryMs; its think time was not auto)`,
      { hint: 'give a calibration file (plb calibrate --out <file>)' },
    );
  if (config.workloadFile !== undefined)
    throw new PlbError(
      'BAD_INPUT',
      `calibration ${path}: the run used --workload ${config.workloadFile}; its costs are not plb's templates'`,
      { hint: 'plb calibrate --workload <file> --out <file> measures that workload' },
    );
  const charged = chargedCosts(base);
  // The run's measurement dealt queries in the workload's proportions (calibrate.ts): each class's
  // share of the queries is its clients times its queries per session, then its template weights.
  const w = config.workload;
  const share = (cls: 'premium' | 'freemium') => w.mix[cls] * Math.max(1, w.classes[cls].queriesPerSession);
  const total = share('premium') + share('freemium');
  let mean = 0;
  for (const cls of ['premium', 'freemium'] as const) {
    const weights = w.classes[cls].queryWeights;
    const sum = weights.point + weights.range + weights.scan;
    if (!(sum > 0) || !(total > 0)) continue;
    for (const k of ['point', 'range', 'scan'] as const)
      mean += (share(cls) / total) * (weights[k] / sum) * charged.templates[k].meanMs;
  }
  if (!(mean > 0))
    throw new PlbError('BAD_INPUT', `calibration ${path}: the run's workload has no read query`);
  const fq = q / mean;
  const fc = c / charged.connect.cpuMs;
  const templates = Object.fromEntries(
    Object.entries(base.templates).map(([k, t]) => [k, { ...t, meanMs: t.meanMs * fq }]),
  ) as SimCalibration['templates'];
  const pm = base.connect.postmasterCpuMs;
  const a = base.atLoad;
  return {
    ...base,
    measured: {
      ...base.measured,
      notes: `${base.measured.notes}; scaled to the run ${path} (queries x${fq.toFixed(3)}: ${q} ms at load; connects x${fc.toFixed(3)}: ${c} ms)`,
    },
    templates,
    connect: {
      ...base.connect,
      cpuMs: base.connect.cpuMs * fc,
      ...(pm !== undefined ? { postmasterCpuMs: pm * fc } : {}),
    },
    healthCpuMs: base.healthCpuMs * fq,
    ...(a !== undefined
      ? {
          atLoad: {
            ...a,
            queryCpuMs: a.queryCpuMs * fq,
            sequentialQueryCpuMs: a.sequentialQueryCpuMs * fq,
            connectCpuMs: a.connectCpuMs * fc,
          },
        }
      : {}),
  };
}
