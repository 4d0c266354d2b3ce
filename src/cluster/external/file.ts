/**
 * Reading a cluster file (run-format/cluster-file.ts): YAML, checked by its schema, every error one
 * line `<file>:<line>: <field> <what>`. The password is read from where the file points (an
 * environment variable or a file) and kept only in memory: what is shown or recorded of the
 * cluster is its redacted form (DSNs without password, and the password cut out of any text).
 */
import { readFileSync } from 'node:fs';
import { basename, dirname, extname, resolve } from 'node:path';
import { readUserFile, YamlFile } from '../../core/user-file.js';
import { PlbError } from '../../core/errors.js';
import {
  clusterFileSchema,
  HOOK_NAMES,
  type ExternalConfig,
  type ClusterFile,
  type HookName,
  type HookSpec,
} from '../../run-format/cluster-file.js';
import { parseDuration } from '../../core/duration.js';
import type { FaultPlan } from '../../run-format/plan.js';
import { FAULT_ACTION_SPECS, type FaultAction, type HookAction } from '../../run-format/fault-actions.js';
import { escapeControl } from '../../core/text.js';

const MAX_FILE_BYTES = 256 * 1024;

export interface ExternalServer {
  id: string;
  kind: 'primary' | 'replica';
  host: string;
  port: number;
  /** `plb proxy`: the replica's zone and relative capacity (absent: none, 1). */
  zone?: string;
  weight?: number;
}

/** One hook of one replica: its argv with the placeholders of that replica filled in. */
interface Hook {
  argv: string[];
  timeoutMs: number;
}

export interface ExternalCluster {
  /** The file as given. */
  path: string;
  name: string;
  user: string;
  dbname: string;
  /** Empty when the file names no password (trust or .pgpass-less auth). */
  password: string;
  servers: ExternalServer[];
  /** r1..rK in order. */
  replicaIds: string[];
  prepare: boolean;
  cpus: number;
  /** replica -> hook name -> hook ({cpus} of throttle is filled in when it runs). */
  hooks: Map<string, Map<HookName, Hook>>;
}

/** Reads, checks and resolves a cluster file; PlbError('BAD_INPUT') naming file, line and field. */
export function loadClusterFile(path: string, env: NodeJS.ProcessEnv = process.env): ExternalCluster {
  const text = readUserFile(path, { code: 'BAD_INPUT', maxBytes: MAX_FILE_BYTES, flag: '--cluster-file' });
  return parseClusterFile(text, path, env);
}

/** parseClusterFile without the file system (except a password file); `path` names it in errors. */
export function parseClusterFile(
  text: string,
  path: string,
  env: NodeJS.ProcessEnv = process.env,
): ExternalCluster {
  const doc = new YamlFile(text, path, 'BAD_INPUT');
  const raw = doc.toJS();
  // Checked first, and never echoed: a password written into the file would end up in messages.
  const pw = (raw as { password?: unknown } | null)?.password;
  if (pw !== undefined && (typeof pw !== 'object' || pw === null))
    throw doc.fail(
      doc.lineAt(['password'], 'key'),
      'password must be { env: NAME } or { file: PATH }, not the password itself',
    );
  const file = doc.check(clusterFileSchema, 'schemas/cluster-file.schema.json describes every field');
  // Errors after the schema: at the line of the field's key.
  const fail = (field: string, what: string): PlbError =>
    doc.fail(doc.lineAt(field.split('.'), 'key'), `${field} ${what}`);

  const replicaIds = Object.keys(file.replicas);
  if (replicaIds.length === 0) throw fail('replicas', 'must name at least r1');
  const zoned = replicaIds.filter((id) => file.replicas[id]?.zone !== undefined);
  if (zoned.length > 0 && zoned.length < replicaIds.length) {
    const bare = replicaIds.find((id) => file.replicas[id]?.zone === undefined) as string;
    throw fail(`replicas.${bare}`, 'has no zone: give every replica one, or none');
  }
  replicaIds.forEach((id, i) => {
    if (id !== `r${i + 1}`) throw fail(`replicas.${id}`, `must be r${i + 1} (replicas are r1..rK in order)`);
  });
  const defaultTimeout = durationMs(file.hookTimeout, () =>
    fail('hookTimeout', 'must be a duration like 60s'),
  );
  const servers: ExternalServer[] = [
    { id: 'primary', kind: 'primary', host: file.primary.host, port: file.primary.port },
    ...replicaIds.map((id): ExternalServer => {
      const s = file.replicas[id]!;
      return {
        id,
        kind: 'replica',
        host: s.host,
        port: s.port,
        ...(s.zone !== undefined ? { zone: s.zone } : {}),
        ...(s.weight !== undefined ? { weight: s.weight } : {}),
      };
    }),
  ];
  const hooks = new Map<string, Map<HookName, Hook>>();
  for (const s of servers.slice(1)) {
    const own = file.replicas[s.id]?.hooks ?? {};
    const mine = new Map<HookName, Hook>();
    for (const name of HOOK_NAMES) {
      const fromReplica = own[name] !== undefined;
      const spec = own[name] ?? file.hooks?.[name];
      if (spec === undefined) continue;
      const field = fromReplica ? `replicas.${s.id}.hooks.${name}` : `hooks.${name}`;
      mine.set(
        name,
        resolveHook(spec, s, defaultTimeout, () => fail(field, 'timeout must be a duration like 30s')),
      );
    }
    hooks.set(s.id, mine);
  }
  return {
    path,
    name: file.name ?? defaultName(path),
    user: file.user,
    dbname: file.dbname,
    password: readPassword(file, path, env, fail),
    servers,
    replicaIds,
    prepare: file.prepare,
    cpus: file.cpus,
    hooks,
  };
}

function defaultName(path: string): string {
  const base = basename(path, extname(path))
    .toLowerCase()
    .replace(/[^a-z0-9_-]/g, '-')
    .replace(/^[^a-z0-9]+/, '');
  return base.slice(0, 40) || 'external';
}

function durationMs(v: number | string, fail: () => PlbError): number {
  const s = parseDuration(v);
  if (s === undefined || !(s > 0)) throw fail();
  return s * 1000;
}

function resolveHook(spec: HookSpec, s: ExternalServer, defaultMs: number, fail: () => PlbError): Hook {
  const argv = Array.isArray(spec) ? spec : spec.run;
  const timeoutMs =
    !Array.isArray(spec) && spec.timeout !== undefined ? durationMs(spec.timeout, fail) : defaultMs;
  return {
    argv: argv.map((a) =>
      substitute(a, { replica: s.id, index: s.id.slice(1), host: s.host, port: String(s.port) }),
    ),
    timeoutMs,
  };
}

/** Fills {name} placeholders; an unknown one is left as written (it may be the command's own). */
export function substitute(arg: string, values: Readonly<Record<string, string>>): string {
  return arg.replace(/\{([a-z]+)\}/g, (m, k: string) => values[k] ?? m);
}

function readPassword(
  file: ClusterFile,
  path: string,
  env: NodeJS.ProcessEnv,
  fail: (field: string, what: string) => PlbError,
): string {
  const p = file.password;
  if (p === undefined) return '';
  if ('env' in p) {
    const v = env[p.env];
    if (v === undefined || v === '') throw fail('password.env', `names ${p.env}, which is not set`);
    return v;
  }
  const target = resolve(dirname(path), p.file);
  try {
    const v = readFileSync(target, 'utf8').replace(/\r?\n$/, '');
    if (v === '') throw fail('password.file', `${escapeControl(target)} is empty`);
    return v;
  } catch (err) {
    if (err instanceof PlbError) throw err;
    // The reason, never the contents.
    throw fail(
      'password.file',
      `cannot read ${escapeControl(target)} (${(err as NodeJS.ErrnoException).code ?? 'error'})`,
    );
  }
}

/** postgresql://user@host:port/dbname: a server's address with nothing secret in it. */
export function redactedDsn(c: ExternalCluster, s: ExternalServer): string {
  const host = s.host.includes(':') ? `[${s.host}]` : s.host;
  return `postgresql://${encodeURIComponent(c.user)}@${host}:${s.port}/${encodeURIComponent(c.dbname)}`;
}

/** Text with the password cut out (hook output, argv, error messages). */
export function redact(c: Pick<ExternalCluster, 'password'>, text: string): string {
  return c.password === '' ? text : text.split(c.password).join('***');
}

function isHookAction(action: FaultAction): action is HookAction {
  return FAULT_ACTION_SPECS[action].hook;
}

/**
 * Every hook the plan needs, before anything starts: its actions and the ones that undo them, for
 * each replica it names. The first missing one is a BAD_INPUT naming the action, replica and plan line.
 */
export function checkPlanHooks(c: ExternalCluster, plan: FaultPlan): void {
  if (plan.replicas > c.replicaIds.length)
    throw new PlbError(
      'BAD_INPUT',
      `${escapeControl(c.path)}: replicas: plan ${plan.name} needs ${plan.replicas} replicas, the file has ${c.replicaIds.length}`,
    );
  for (const e of plan.events) {
    // Its own hook and the one of the action that undoes it when a run ends early (the
    // injector's restore); an action without a hook (replay's: SQL on the standby) needs none.
    for (const action of [e.action, FAULT_ACTION_SPECS[e.action].undoneBy]) {
      if (action === null || !isHookAction(action) || c.hooks.get(e.replica)?.has(action)) continue;
      const why = action === e.action ? '' : ` (it undoes the plan's ${e.action} when a run ends early)`;
      throw new PlbError(
        'BAD_INPUT',
        `${escapeControl(c.path)}: hooks.${action}: no hook for ${action} of ${e.replica}, which plan ${plan.name} (line ${e.line}) needs${why}`,
        { hint: `add hooks.${action} (or replicas.${e.replica}.hooks.${action}) to the cluster file` },
      );
    }
  }
}

/** The config.json record of the cluster (run-format externalConfigSchema). */
export function externalConfig(c: ExternalCluster): ExternalConfig {
  const hooks: Record<string, Record<string, string[]>> = {};
  for (const [id, m] of c.hooks)
    hooks[id] = Object.fromEntries([...m].map(([k, h]) => [k, h.argv.map((a) => redact(c, a))]));
  return {
    file: c.path,
    servers: Object.fromEntries(c.servers.map((s) => [s.id, redactedDsn(c, s)])),
    prepare: c.prepare,
    cpuMeasured: c.replicaIds.some((id) => c.hooks.get(id)?.has('cpu')),
    hooks,
  };
}
