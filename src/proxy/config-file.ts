/**
 * `plb proxy --config proxy.yaml`: the proxy's flags in a file, read by the one user-file reader.
 * A key is a flag's name (`premium-port: 6432`, `cluster-file: fleet.yaml`, `replica: [a:5432]`),
 * its value what the flag takes, checked by the flag's own parser; the servers come from
 * `cluster-file:`, `replica:` or `name:` as on the command line (no second fleet format). Paths are
 * relative to the config file. Flags given on the command line override the file.
 */
import { dirname, isAbsolute, resolve } from 'node:path';
import { isMap, isScalar } from 'yaml';
import { readUserFile, YamlFile } from '../core/user-file.js';
import { PlbError } from '../core/errors.js';
import { proxyFlags, type ProxyFlagValues } from './options.js';

const MAX_FILE_BYTES = 64 * 1024;

/** Not settable from the file: the file itself and the one-shot check. */
const NOT_IN_FILE = new Set(['config', 'check']);
/** Values that are paths: relative to the config file. */
const PATH_KEYS = new Set(['cluster-file', 'tls-cert', 'tls-key', 'server-ca']);

type FlagName = keyof typeof proxyFlags;
type FileValues = Partial<Record<FlagName, string | number | boolean | string[]>>;

export interface ProxyConfigFile {
  path: string;
  values: FileValues;
  /** Key -> line, for errors found after the file was read. */
  lines: Map<string, number>;
}

interface FlagDef {
  type: 'boolean' | 'option';
  multiple?: boolean;
  options?: readonly string[];
  parse?: (input: string, ctx: unknown, opts: unknown) => Promise<unknown>;
}

const flagDef = (k: string): FlagDef | undefined =>
  Object.hasOwn(proxyFlags, k) && !NOT_IN_FILE.has(k)
    ? (proxyFlags[k as FlagName] as unknown as FlagDef)
    : undefined;

/** The text after a leading `--flag: ` (the flag's own parser names itself; the file names the key). */
const reason = (msg: string, key: string): string => msg.replace(new RegExp(`^--${key}: `), '');

/** Reads and checks a config file; every error one line `<file>:<line>: <key>: <what>`. */
export async function loadProxyConfigFile(path: string): Promise<ProxyConfigFile> {
  const text = readUserFile(path, { code: 'BAD_INPUT', maxBytes: MAX_FILE_BYTES, flag: '--config' });
  return parseProxyConfigFile(text, path);
}

export async function parseProxyConfigFile(text: string, path: string): Promise<ProxyConfigFile> {
  const doc = new YamlFile(text, path, 'BAD_INPUT');
  const root = doc.resolve(doc.root);
  const values: FileValues = {};
  const lines = new Map<string, number>();
  if (root === undefined || (isScalar(root) && root.value === null)) return { path, values, lines };
  if (!isMap(root))
    throw doc.fail(doc.lineOf(root), 'must be a mapping of flag names to values, like premium-port: 6432');
  for (const pair of root.items) {
    const keyNode = pair.key as Parameters<YamlFile['lineOf']>[0];
    const key = String(doc.value(keyNode ?? undefined));
    const line = doc.lineOf(keyNode);
    const def = flagDef(key);
    if (!def)
      throw doc.fail(
        line,
        NOT_IN_FILE.has(key)
          ? `${key}: not in a config file (a command-line flag only)`
          : `${key}: unknown key (keys are plb proxy's flag names)`,
      );
    if (lines.has(key)) throw doc.fail(line, `${key}: given twice`);
    lines.set(key, line);
    const raw = doc.value(pair.value as Parameters<YamlFile['value']>[0]);
    const fail = (what: string): PlbError => doc.fail(line, `${key}: ${what}`);
    values[key as FlagName] = await fileValue(key, def, raw, fail, dirname(path));
  }
  return { path, values, lines };
}

async function fileValue(
  key: string,
  def: FlagDef,
  raw: unknown,
  fail: (what: string) => PlbError,
  base: string,
): Promise<string | number | boolean | string[]> {
  if (def.type === 'boolean') {
    if (typeof raw !== 'boolean') throw fail('must be true or false');
    return raw;
  }
  const one = async (v: unknown): Promise<string | number> => {
    if (typeof v !== 'string' && typeof v !== 'number')
      throw fail('must be a single value (a string or a number)');
    const text = String(v);
    if (def.options && !def.options.includes(text))
      throw fail(`must be one of ${def.options.join(', ')} (got "${text}")`);
    let parsed: unknown = text;
    try {
      if (def.parse) parsed = await def.parse(text, {}, { name: key });
    } catch (err) {
      throw fail(reason((err as Error).message, key));
    }
    if (PATH_KEYS.has(key) && !isAbsolute(text)) return resolve(base, text);
    return typeof parsed === 'number' ? parsed : text;
  };
  if (def.multiple) {
    const list = Array.isArray(raw) ? raw : [raw];
    if (list.length === 0) throw fail('must list at least one value');
    return Promise.all(list.map(async (v) => String(await one(v))));
  }
  return one(raw);
}

/**
 * The flags in force: the command line's where given there, else the file's, else the defaults
 * (already in `cli`). `explicit`: the flags the command line gave.
 */
export function mergeProxyFlags(
  cli: ProxyFlagValues,
  explicit: ReadonlySet<string>,
  file: ProxyConfigFile | undefined,
): ProxyFlagValues {
  if (!file) return cli;
  const out: Record<string, unknown> = { ...cli };
  for (const [k, v] of Object.entries(file.values)) if (!explicit.has(k)) out[k] = v;
  // The servers are named one way: the command line's source replaces the file's.
  const sources = ['name', 'cluster-file', 'replica'];
  if (sources.some((k) => explicit.has(k))) for (const k of sources) if (!explicit.has(k)) delete out[k];
  return out as unknown as ProxyFlagValues;
}

/** The flags the caller set, where it cannot say: those that differ from their defaults. */
export function flagsNotDefault(flags: ProxyFlagValues): Set<string> {
  const out = new Set<string>();
  for (const [k, v] of Object.entries(flags)) {
    if (v === undefined) continue;
    const def = (proxyFlags as Record<string, { default?: unknown }>)[k]?.default;
    if (def === undefined || def !== v) out.add(k);
  }
  return out;
}

/** A check error of a value that came from the file, at its line: `<file>:<line>: <key>: <what>`. */
export function atFileLine(
  err: unknown,
  file: ProxyConfigFile | undefined,
  explicit: ReadonlySet<string>,
): unknown {
  if (!file || !(err instanceof PlbError)) return err;
  const m = /^(--[a-z-]+(?: and --[a-z-]+)*)(:? )/.exec(err.message);
  if (!m) return err;
  // The line of the first named flag that came from the file.
  const keys = (m[1] as string).split(' and ').map((k) => k.slice(2));
  const key = keys.find((k) => !explicit.has(k) && file.lines.has(k));
  if (key === undefined) return err;
  const line = file.lines.get(key) as number;
  const rest = err.message.slice(m[0].length);
  return new PlbError(err.code, `${file.path}:${line}: ${keys.join(' and ')}${m[2]}${rest}`, {
    ...(err.hint !== undefined ? { hint: err.hint } : {}),
  });
}
