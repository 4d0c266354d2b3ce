import { escapeControl } from './text.js';

/**
 * The one error type of plb. `code` is stable (tests and scripts match on it), `hint` tells the
 * user what to do next, `cause` keeps the underlying error.
 */
export type PlbErrorCode =
  | 'NO_REPLICA'
  | 'ADMISSION_FULL'
  | 'ADMISSION_TIMEOUT'
  | 'BAD_INPUT'
  | 'PLAN_INVALID'
  | 'CLUSTER_UP_FAILED'
  | 'CLUSTER_NOT_FOUND'
  | 'CLUSTER_LOCKED'
  | 'DOCKER_UNAVAILABLE'
  | 'IMAGE_MISSING'
  | 'IMAGE_BUILD_FAILED'
  | 'BINARIES_MISSING'
  | 'TIMEOUT'
  | 'CALIBRATION_FAILED'
  | 'CONNECT_FAILED'
  | 'SESSION_FAILED'
  | 'HOOK_FAILED'
  | 'RUN_DIR_INVALID'
  | 'TOLERANCE_EXCEEDED'
  | 'INTERRUPTED'
  | 'INTERNAL';

export class PlbError extends Error {
  readonly code: PlbErrorCode;
  readonly hint: string | undefined;

  constructor(code: PlbErrorCode, message: string, opts: { hint?: string; cause?: unknown } = {}) {
    super(message, opts.cause === undefined ? undefined : { cause: opts.cause });
    this.name = 'PlbError';
    this.code = code;
    this.hint = opts.hint;
  }
}

export function isPlbError(err: unknown, code?: PlbErrorCode): err is PlbError {
  return err instanceof PlbError && (code === undefined || err.code === code);
}

/** Anything thrown, as an Error: a thrown string or object is wrapped (its String() the message). */
export function asError(err: unknown): Error {
  return err instanceof Error ? err : new Error(String(err));
}

/** The message of anything thrown, for log lines and for errors that wrap it. */
export function errorText(err: unknown): string {
  return asError(err).message;
}

/**
 * One line for the terminal: message, then the hint when there is one. Control characters (from
 * user-provided names and paths, or a newline in a cause) are escaped, so it stays one line.
 */
export function formatError(err: unknown): string {
  if (err instanceof PlbError)
    return escapeControl(err.hint ? `${err.message} (hint: ${err.hint})` : err.message);
  if (err instanceof Error) return escapeControl(err.message);
  return escapeControl(String(err));
}
