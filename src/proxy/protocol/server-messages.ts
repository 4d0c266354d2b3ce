/**
 * The few backend messages a session decodes (pg-protocol's parser): ErrorResponse, to know how
 * the server ended a session, and ParameterStatus of application_name, to see a class named only
 * after the session was routed (a late class: pgJDBC sends ApplicationName as a SET after startup
 * unless assumeMinServerVersion=9.0 is given).
 */
import { Parser } from 'pg-protocol/dist/parser.js';
import type { BackendMessage } from 'pg-protocol/dist/messages.js';
import type { ServiceClass } from '../../core/service-class.js';
import { classOfApplicationName } from './startup-packet.js';

export interface ServerError {
  severity?: string | undefined;
  code?: string | undefined;
  message: string;
}

export const MSG_PARAMETER_STATUS = 0x53; // 'S'
const APP_NAME = Buffer.from('application_name\0');

function decode(msg: Buffer): BackendMessage | undefined {
  let decoded: BackendMessage | undefined;
  new Parser().parse(msg, (m) => (decoded = m));
  return decoded;
}

/** An ErrorResponse's severity, SQLSTATE and message. */
export function decodeServerError(msg: Buffer): ServerError {
  const e = decode(msg) as (BackendMessage & Partial<ServerError>) | undefined;
  return { severity: e?.severity, code: e?.code, message: e?.message ?? 'server error' };
}

/**
 * The class a ParameterStatus message names when it reports application_name as premium or
 * freemium; undefined for any other parameter or name.
 */
export function reportedClass(msg: Buffer): { cls: ServiceClass; name: string } | undefined {
  // Most ParameterStatus messages are other settings: not decoded.
  if (msg.length < 5 + APP_NAME.length || !msg.subarray(5, 5 + APP_NAME.length).equals(APP_NAME))
    return undefined;
  const m = decode(msg) as (BackendMessage & { parameterName?: string; parameterValue?: string }) | undefined;
  if (m?.parameterName !== 'application_name') return undefined;
  const cls = classOfApplicationName(m.parameterValue ?? '');
  return cls && { cls, name: m.parameterValue as string };
}

/** The warning for a late class: which class, where the session stays, and what to do instead. */
export function lateClassWarning(named: ServiceClass, routed: ServiceClass, replica: string): string {
  return (
    `warning: a session on ${replica} set application_name to ${named} after it was routed as ${routed}; ` +
    `it stays a ${routed} session. Send the name in the startup packet (pgJDBC: assumeMinServerVersion=9.0) ` +
    `or use options=-c plb.class=${named} with --class-from option`
  );
}
