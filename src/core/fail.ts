import { Errors } from '@oclif/core';
import { formatError, isPlbError, type PlbErrorCode } from './errors.js';
import { escapeControl } from './text.js';

/** Exit code of `plb report` when a metric moved beyond its tolerance. */
export const TOLERANCE_EXIT_CODE = 3;

/** Exit codes, as README.md's table lists them. */
const EXIT = {
  ok: 0,
  /** A wrong value (flag, argument, plan field) and every other error. */
  error: 1,
  /** A flag or argument oclif cannot place: unknown flag, missing or unexpected argument. */
  usage: 2,
  tolerance: TOLERANCE_EXIT_CODE,
} as const;

/** The exit codes as `--help` shows them; README.md's table says the same. */
export const EXIT_CODES_HELP = `Exit codes:
0    ok
1    error: bad input (names the flag or field), unreadable run directory, ...
2    usage: unknown flag, missing or unexpected argument
${TOLERANCE_EXIT_CODE}    --compare-to: a metric beyond --tolerance; --gate: a verdict flipped; --gate-absolute: a cell got worse
127  unknown command
With --json an error is {"error":{"code","message","hint"}} on stdout;
without, one line on stderr.`;

// oclif's parser errors that mean "not a command line this command takes" (their class names: the
// parser does not export the classes themselves). Every other parse error is a wrong value.
const USAGE_ERRORS = new Set(['NonExistentFlagsError', 'UnexpectedArgsError', 'RequiredArgsError']);

// eslint-disable-next-line no-control-regex
const ANSI_RE = /\u001b\[[0-9;]*m/g;

/**
 * The message alone, on one line. oclif decorates what a flag's parse function threw as
 * "Parsing --x \n\t<message>\nSee more help with --help", and its own errors end with that help
 * line: both are taken back to the message.
 */
function errorMessage(err: unknown): string {
  if (!(err instanceof Error)) return escapeControl(String(err));
  let text = err.message.replace(ANSI_RE, '');
  const wrapped = /^Parsing (--\S+) \n\t([\s\S]*)\nSee more help with --help$/.exec(text);
  if (wrapped) {
    const [, flag = '', inner = ''] = wrapped;
    // oclif's own parsers (Flags.integer) do not name the flag; plb's always do.
    text = inner.includes(flag) ? inner : `${flag}: ${inner}`;
  }
  const missing = (err as { args?: { name?: string }[] }).args;
  if (err.constructor.name === 'RequiredArgsError' && Array.isArray(missing))
    return `missing argument ${missing.map((a) => a.name ?? '?').join(', ')}`;
  text = text.replace(/\nSee more help with --help$/, '');
  // "The following error occurred:\n  --a=x cannot also be provided when using --b": the reasons.
  text = text.replace(/^The following errors? occurred:\n\s*/, '');
  return escapeControl(text.split(/\n\s*/).join('; '));
}

function hintOf(err: unknown): string | undefined {
  if (isPlbError(err)) return err.hint;
  if (err instanceof Errors.CLIError && err.constructor.name !== 'CLIError') return 'see --help';
  return undefined;
}

/** `<message> (hint: ...)`, one line with control characters escaped: what follows `Error: `. */
export function errorLine(err: unknown): string {
  if (isPlbError(err) && !err.message.startsWith('Parsing --')) return formatError(err);
  const hint = hintOf(err);
  return hint ? `${errorMessage(err)} (hint: ${escapeControl(hint)})` : errorMessage(err);
}

function errorCode(err: unknown): PlbErrorCode | 'USAGE' {
  if (isPlbError(err)) return err.code;
  if (err instanceof Error && USAGE_ERRORS.has(err.constructor.name)) return 'USAGE';
  if (err instanceof Errors.CLIError) return 'BAD_INPUT';
  return 'INTERNAL';
}

export function exitCodeOf(err: unknown): number {
  const code = errorCode(err);
  if (code === 'USAGE') return EXIT.usage;
  if (code === 'TOLERANCE_EXCEEDED') return EXIT.tolerance;
  return EXIT.error;
}

/** What --json prints on stdout for an error: `{"error":{"code","message","hint"}}`. */
export function errorJson(err: unknown): { error: { code: string; message: string; hint: string | null } } {
  const hint = hintOf(err);
  return { error: { code: errorCode(err), message: errorMessage(err), hint: hint ?? null } };
}
