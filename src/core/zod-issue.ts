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
