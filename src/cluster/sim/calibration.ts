import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { PlbError } from '../../core/errors.js';
import { packageRoot } from '../../core/package-info.js';
import type { QueryKind } from '../../run-format/config.js';
import { builtinSql } from '../templates.js';

/**
 * What the simulator knows of a real replica, measured by `plb calibrate` on a real cluster
 * under its CPU quota. Service demands are in ms of ONE core: a query alone runs its demand d in
 * d ms on one core. A quota of C cores is CFS bandwidth control (see CfsCpu): C × cfsPeriodMs ms
 * of CPU per period on up to hostCores cores at once, then nothing until the next period.
 */
export interface SimCalibration {
  version: 1;
  /** Where and when it was measured (free-form facts, shown in config.json). */
  measured: {
    at: string;
    machine: string;
    postgres: string;
    /** Quota of the replica it was measured on (cores). */
    replicaCpus: number;
    /** Clients, samples and anything else a reader needs to judge it. */
    notes: string;
  };
  /**
   * CPU demand of one query per template: mean (ms of one core) and coefficient of variation.
   * plb's own three by kind; a workload file's templates (`plb calibrate --workload`) by name,
   * with their SQL, which is how the simulator knows a statement.
   */
  templates: Record<QueryKind, TemplateCost> & Record<string, TemplateCost>;
  /** Fixed latency per query that does not use the replica's CPU (protocol, loopback), ms. */
  queryOverheadMs: number;
  /**
   * A connect + authentication: CPU demand on the server (ms of one core) and fixed latency (ms);
   * of the CPU, `postmasterCpuMs` is the postmaster's fork, made one connection at a time
   * (postmaster.ts; absent: no such stage, the whole connect is one backend's CPU).
   */
  connect: { cpuMs: number; latencyMs: number; postmasterCpuMs?: number };
  /** Health check (SELECT 1): CPU demand, ms of one core. */
  healthCpuMs: number;
  /** After start(): ms until the server accepts connections, then ms until it streams again. */
  restartMs: number;
  catchUpMs: number;
  /** Host cores a replica's cgroup may run on at once (absent: 2, the calibration machine's). */
  hostCores?: number;
  /** CFS bandwidth period, ms (absent: 100, Linux's default). */
  cfsPeriodMs?: number;
  /** Fraction of its quota the host delivers to a saturated replica (absent: 1; host-contention.ts). */
  hostShare?: number;
  /**
   * The scheduler's time slice, ms: backends run a slice each in turn (rr-cpu.ts). Absent:
   * processor sharing (cfs-cpu.ts), every runnable backend at once at an equal share.
   */
  sliceMs?: number;
  /**
   * What a query and a connect cost at the load experiments run at (16 sessions at `targetCpu` of
   * the quota), measured by `plb calibrate` after the sequential figures above. Absent: those stand.
   */
  atLoad?: AtLoad;
}

export interface AtLoad {
  targetCpu: number;
  sessions: number;
  /** Mean CPU of a query of plb's mix at that load, ms of one core. */
  queryCpuMs: number;
  /** The same mix's mean from the sequential per-template figures (the scale's denominator). */
  sequentialQueryCpuMs: number;
  connectCpuMs: number;
  /** Other replicas loaded alike meanwhile (absent: none, r1 alone, as older calibrations were). */
  companions?: number;
}

interface TemplateCost {
  meanMs: number;
  cv: number;
  /** A workload file's template: its statement (plb's own three are known by kind). */
  sql?: string;
}

let builtinText: ReadonlyMap<string, QueryKind> | undefined;

/**
 * The CPU of every statement a calibration prices, by its SQL text (what the simulator sees):
 * plb's three, measured by kind, under the default workload's text for them (so any workload file
 * that repeats that text, workloads/default.yaml itself included, is priced), then a workload's own
 * templates (`plb calibrate --workload`) under the SQL recorded with them.
 */
export function costsBySql(cal: SimCalibration): ReadonlyMap<string, TemplateCost> {
  // Trimmed as a workload file's templates are (template-file.ts).
  builtinText ??= new Map(Object.entries(builtinSql()).map(([k, sql]) => [sql.trim(), k as QueryKind]));
  const out = new Map<string, TemplateCost>();
  for (const [sql, kind] of builtinText) out.set(sql, cal.templates[kind]);
  for (const c of Object.values(cal.templates)) if (c.sql !== undefined) out.set(c.sql, c);
  return out;
}

/** The calibration plb ships, measured on this machine type. */
export function defaultCalibrationPath(): string {
  return join(packageRoot(), 'calibration', 'default.json');
}

/** Reads and checks a calibration file; every problem names the file and the field. */
export function loadCalibration(path = defaultCalibrationPath()): SimCalibration {
  let raw: unknown;
  try {
    raw = JSON.parse(readFileSync(path, 'utf8'));
  } catch (err) {
    throw new PlbError('BAD_INPUT', `calibration ${path}: cannot read it as JSON`, {
      cause: err,
      hint: 'plb calibrate --out <file> writes one',
    });
  }
  return checkCalibration(raw, path);
}

const BUILTIN_KINDS: readonly string[] = ['point', 'range', 'scan'];

export function checkCalibration(raw: unknown, where: string): SimCalibration {
  const bad = (field: string, want: string): never => {
    throw new PlbError('BAD_INPUT', `calibration ${where}: ${field} must be ${want}`);
  };
  const obj = (v: unknown, field: string): Record<string, unknown> =>
    typeof v === 'object' && v !== null && !Array.isArray(v)
      ? (v as Record<string, unknown>)
      : bad(field, 'an object');
  const num = (v: unknown, field: string, min = 0): number =>
    typeof v === 'number' && Number.isFinite(v) && v >= min ? v : bad(field, `a number >= ${min}`);
  const c = obj(raw, '(the file)');
  if (c.version !== 1) bad('version', '1');
  const m = obj(c.measured, 'measured');
  const t = obj(c.templates, 'templates');
  const template = (k: string): TemplateCost => {
    const x = obj(t[k], `templates.${k}`);
    const cost: TemplateCost = {
      meanMs: num(x.meanMs, `templates.${k}.meanMs`),
      cv: num(x.cv, `templates.${k}.cv`),
    };
    if (BUILTIN_KINDS.includes(k)) return cost;
    if (typeof x.sql !== 'string' || x.sql === '') bad(`templates.${k}.sql`, 'the SQL of the template');
    return { ...cost, sql: x.sql as string };
  };
  const extra = Object.fromEntries(
    Object.keys(t)
      .filter((k) => !BUILTIN_KINDS.includes(k))
      .map((k) => [k, template(k)]),
  );
  const conn = obj(c.connect, 'connect');
  if (c.hostCores !== undefined && !(Number.isInteger(c.hostCores) && (c.hostCores as number) >= 1))
    bad('hostCores', 'an integer >= 1');
  // Linux accepts periods of 1 ms to 1 s.
  if (c.cfsPeriodMs !== undefined) {
    const p = num(c.cfsPeriodMs, 'cfsPeriodMs', 1);
    if (p > 1000) bad('cfsPeriodMs', 'a number from 1 to 1000');
  }
  if (c.hostShare !== undefined) {
    const h = num(c.hostShare, 'hostShare', 0.01);
    if (h > 1) bad('hostShare', 'a number from 0.01 to 1');
  }
  if (c.sliceMs !== undefined) {
    const v = num(c.sliceMs, 'sliceMs', 0.01);
    if (v > 1000) bad('sliceMs', 'a number from 0.01 to 1000');
  }
  let atLoad: AtLoad | undefined;
  if (c.atLoad !== undefined) {
    const a = obj(c.atLoad, 'atLoad');
    atLoad = {
      targetCpu: num(a.targetCpu, 'atLoad.targetCpu', 0.01),
      sessions: num(a.sessions, 'atLoad.sessions', 1),
      queryCpuMs: num(a.queryCpuMs, 'atLoad.queryCpuMs', 1e-6),
      sequentialQueryCpuMs: num(a.sequentialQueryCpuMs, 'atLoad.sequentialQueryCpuMs', 1e-6),
      connectCpuMs: num(a.connectCpuMs, 'atLoad.connectCpuMs'),
      ...(a.companions !== undefined ? { companions: num(a.companions, 'atLoad.companions') } : {}),
    };
  }
  return {
    version: 1,
    measured: {
      at: String(m.at ?? ''),
      machine: String(m.machine ?? ''),
      postgres: String(m.postgres ?? ''),
      replicaCpus: num(m.replicaCpus, 'measured.replicaCpus', 0.01),
      notes: String(m.notes ?? ''),
    },
    templates: { ...extra, point: template('point'), range: template('range'), scan: template('scan') },
    queryOverheadMs: num(c.queryOverheadMs, 'queryOverheadMs'),
    connect: {
      cpuMs: num(conn.cpuMs, 'connect.cpuMs'),
      latencyMs: num(conn.latencyMs, 'connect.latencyMs'),
      ...(conn.postmasterCpuMs !== undefined
        ? { postmasterCpuMs: num(conn.postmasterCpuMs, 'connect.postmasterCpuMs', 0.001) }
        : {}),
    },
    healthCpuMs: num(c.healthCpuMs, 'healthCpuMs'),
    restartMs: num(c.restartMs, 'restartMs'),
    catchUpMs: num(c.catchUpMs, 'catchUpMs'),
    ...(c.hostCores !== undefined ? { hostCores: c.hostCores as number } : {}),
    ...(c.cfsPeriodMs !== undefined ? { cfsPeriodMs: c.cfsPeriodMs as number } : {}),
    ...(c.hostShare !== undefined ? { hostShare: c.hostShare as number } : {}),
    ...(c.sliceMs !== undefined ? { sliceMs: c.sliceMs as number } : {}),
    ...(atLoad ? { atLoad } : {}),
  };
}

/**
 * The costs the simulator charges: with an `atLoad` measurement, every template's sequential mean
 * scaled by what plb's mix cost at load over what it cost alone (a real query under load costs
 * several times its CPU alone), and the connect's CPU at load. Without one, the calibration as is.
 */
export function chargedCosts(cal: SimCalibration): SimCalibration {
  const a = cal.atLoad;
  if (a === undefined) return cal;
  const f = a.queryCpuMs / a.sequentialQueryCpuMs;
  const templates = Object.fromEntries(
    Object.entries(cal.templates).map(([k, t]) => [k, { ...t, meanMs: t.meanMs * f }]),
  ) as SimCalibration['templates'];
  return { ...cal, templates, connect: { ...cal.connect, cpuMs: a.connectCpuMs } };
}
