/**
 * Turning a zod failure into plb's one-line error: `<where>: <field> <what is wrong>`, naming the
 * first bad field only (the rest usually follow from it).
 */
import type { z } from 'zod';
import { PlbError, type PlbErrorCode } from './errors.js';

/** `phases[0].classes.premium.p95` from a zod issue path. */
export function fieldPath(path: readonly PropertyKey[]): string {
  let out = '';
  for (const key of path) {
    if (typeof key === 'number') out += `[${key}]`;
    else out += out === '' ? String(key) : `.${String(key)}`;
  }
  return out;
}

/** What is wrong with the value at the issue, said shortly (zod's own text is generic). */
function describeIssue(issue: z.core.$ZodIssue, input: unknown): string {
  const got = valueAt(input, issue.path);
  switch (issue.code) {
    case 'invalid_type':
      return got === undefined ? 'is missing' : `must be ${article(issue.expected)} (got ${show(got)})`;
    case 'invalid_value':
      return got === undefined
        ? `is missing (must be ${oneOf(issue.values)})`
        : `must be ${oneOf(issue.values)} (got ${show(got)})`;
    case 'invalid_union': {
      // A discriminated union whose discriminator (e.g. an event's type) matches no branch.
      const options = (issue as { options?: unknown[] }).options;
      if (options !== undefined)
        return got === undefined ? 'is missing' : `must be ${oneOf(options)} (got ${show(got)})`;
      return `does not match any allowed shape (got ${show(got)})`;
    }
    case 'too_small':
      return `must be ${issue.inclusive === false ? '>' : '>='} ${String(issue.minimum)} (got ${show(got)})`;
    case 'too_big':
      return `must be ${issue.inclusive === false ? '<' : '<='} ${String(issue.maximum)} (got ${show(got)})`;
    case 'invalid_format':
      return `is not a valid ${issue.format} (got ${show(got)})`;
    case 'unrecognized_keys':
      return `has unknown field ${issue.keys.map((k) => JSON.stringify(k)).join(', ')}`;
    default:
      return issue.message;
  }
}

/** `1`, `"a" or "b"`, `one of "a", "b", "c"`. */
function oneOf(values: readonly unknown[]): string {
  const shown = values.map((v) => JSON.stringify(v));
  if (shown.length <= 2) return shown.join(' or ');
  return `one of ${shown.join(', ')}`;
}

function article(expected: string): string {
  return /^[aeiou]/.test(expected) ? `an ${expected}` : `a ${expected}`;
}

function valueAt(input: unknown, path: readonly PropertyKey[]): unknown {
  let v = input;
  for (const key of path) {
    if (typeof v !== 'object' || v === null) return undefined;
    v = (v as Record<PropertyKey, unknown>)[key];
  }
  return v;
}

function show(v: unknown): string {
  if (v === null) return 'null';
  if (v === undefined) return 'nothing';
  if (Array.isArray(v)) return 'a list';
  if (typeof v === 'object') return 'an object';
  const s = typeof v === 'string' ? JSON.stringify(v) : String(v);
  return s.length > 60 ? `${s.slice(0, 57)}...` : s;
}

/** The first issue as `<field> <what>` (only `<what>` when the top level itself is wrong). */
export function firstIssue(error: z.ZodError, input: unknown): string {
  const issue = error.issues[0];
  if (!issue) return 'is invalid';
  // A discriminated union reports the nested issue of the matching branch under its own path.
  const inner =
    issue.code === 'invalid_union' && issue.errors.length === 1 && issue.errors[0]?.[0]
      ? { ...issue.errors[0][0], path: [...issue.path, ...issue.errors[0][0].path] }
      : issue;
  const field = fieldPath(inner.path);
  const what = describeIssue(inner as z.core.$ZodIssue, input);
  return field === '' ? what : `${field} ${what}`;
}

/** What a reader reports of a failed check: the text, and the path whose line it is at. */
interface IssueReport {
  text: string;
  /** The field whose line the error is at (`of: 'key'`: its key's line, as for an unknown field). */
  path: readonly PropertyKey[];
  of: 'key' | 'value';
  hint?: string;
}

export type IssueReporter = (error: z.ZodError, input: unknown) => IssueReport;

/** The first issue, worded by firstIssue, at its field (an unknown field: at its key). */
export const reportFirstIssue: IssueReporter = (error, input) => {
  const issue = error.issues[0];
  const text = firstIssue(error, input);
  return issue?.code === 'unrecognized_keys'
    ? { text, path: [...issue.path, issue.keys[0] ?? ''], of: 'key' }
    : { text, path: issue?.path ?? [], of: 'value' };
};

const startsWith = (path: readonly PropertyKey[], prefix: readonly PropertyKey[]) =>
  prefix.length <= path.length && prefix.every((k, i) => path[i] === k);

/**
 * For a schema that gives every issue its whole text (the fault plan's): `<field>: <message>`,
 * `<field>` being the issue's path, or `root` at the top. A custom issue may set `params.field` (the
 * field to name), `params.at` (the path whose line to report, e.g. an event's for a rule about the
 * whole event), `params.of` and `params.hint`. An unknown field is reported, at its key, before any
 * other issue inside its mapping: a typo explains the "required" it causes, so it goes first.
 */
export function reportOwnMessage(root: string): IssueReporter {
  return (error) => {
    let issue = error.issues[0];
    if (!issue) return { text: `${root}: is invalid`, path: [], of: 'value' };
    const first = issue;
    const unknown = error.issues
      .filter((i) => i.code === 'unrecognized_keys' && startsWith(first.path, i.path))
      .sort((a, b) => a.path.length - b.path.length)[0];
    if (unknown) issue = unknown;
    if (issue.code === 'unrecognized_keys') {
      const path = [...issue.path, issue.keys[0] ?? ''];
      return { text: `${fieldPath(path)}: ${issue.message}`, path, of: 'key' };
    }
    const params = (issue.code === 'custom' ? issue.params : undefined) as
      | { field?: string; at?: PropertyKey[]; of?: 'key' | 'value'; hint?: string }
      | undefined;
    const field = params?.field ?? (fieldPath(issue.path) || root);
    return {
      text: `${field}: ${issue.message}`,
      path: params?.at ?? issue.path,
      of: params?.of ?? 'value',
      ...(params?.hint !== undefined ? { hint: params.hint } : {}),
    };
  };
}

/**
 * Parses `value` with `schema`; on failure throws PlbError(code) `<where>: <field> <what>`.
 * `where` is the file (and line) the value came from.
 */
export function parseOrThrow<S extends z.ZodType>(
  schema: S,
  value: unknown,
  where: string,
  opts: { code?: PlbErrorCode; hint?: string } = {},
): z.output<S> {
  const r = schema.safeParse(value);
  if (r.success) return r.data;
  throw new PlbError(opts.code ?? 'RUN_DIR_INVALID', `${where}: ${firstIssue(r.error, value)}`, {
    ...(opts.hint !== undefined ? { hint: opts.hint } : {}),
    cause: r.error,
  });
}
