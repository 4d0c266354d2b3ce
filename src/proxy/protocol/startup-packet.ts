/**
 * The untyped first packets a client sends (pg-protocol parses only backend messages): Int32
 * length (itself included), Int32 code, body. StartupMessage (code = protocol version 3.x,
 * then name/value C strings and a final zero byte), SSLRequest, GSSENCRequest and CancelRequest.
 * Pure: bytes in, a description out.
 */
import type { ServiceClass } from '../../core/service-class.js';

export const SSL_REQUEST_CODE = 80877103;
export const GSSENC_REQUEST_CODE = 80877104;
export const CANCEL_REQUEST_CODE = 80877102;
/** PostgreSQL's own cap on a startup packet (MAX_STARTUP_PACKET_LENGTH). */
export const MAX_STARTUP_PACKET = 10_000;

export type StartupPacket =
  | { kind: 'incomplete' }
  | { kind: 'ssl'; length: number }
  | { kind: 'gssenc'; length: number }
  | { kind: 'cancel'; length: number; pid: number; secret: Buffer }
  | { kind: 'startup'; length: number; protocol: number; params: Record<string, string> }
  | { kind: 'invalid'; code: string; reason: string }
  /** A length no first packet has (a Terminate, 'X' then 4, reads as 1476395008): not a client. */
  | { kind: 'bad-length'; length: number };

/** Reads the packet at the start of `buf`; `incomplete` until all of it has arrived. */
export function readStartupPacket(buf: Buffer): StartupPacket {
  if (buf.length < 4) return { kind: 'incomplete' };
  const length = buf.readInt32BE(0);
  if (length < 8 || length > MAX_STARTUP_PACKET) return { kind: 'bad-length', length };
  if (buf.length < length) return { kind: 'incomplete' };
  const code = buf.readInt32BE(4);
  if (code === SSL_REQUEST_CODE || code === GSSENC_REQUEST_CODE) {
    if (length !== 8)
      return { kind: 'invalid', code: '08P01', reason: `invalid length ${length} of an encryption request` };
    return { kind: code === SSL_REQUEST_CODE ? 'ssl' : 'gssenc', length };
  }
  if (code === CANCEL_REQUEST_CODE) {
    // 3.0: a 4-byte secret; 3.2 allows a longer one (up to 256 bytes).
    if (length < 16 || length > 12 + 256) {
      return { kind: 'invalid', code: '08P01', reason: `invalid length ${length} of a cancel request` };
    }
    return {
      kind: 'cancel',
      length,
      pid: buf.readInt32BE(8),
      secret: Buffer.from(buf.subarray(12, length)),
    };
  }
  if (code >>> 16 !== 3) {
    return {
      kind: 'invalid',
      code: '0A000',
      reason: `unsupported frontend protocol ${code >>> 16}.${code & 0xffff}: the proxy speaks 3.x`,
    };
  }
  const params: Record<string, string> = {};
  let pos = 8;
  for (;;) {
    if (pos >= length) return { kind: 'invalid', code: '08P01', reason: 'startup packet not terminated' };
    if (buf[pos] === 0) break;
    const name = cString(buf, pos, length);
    if (name === undefined)
      return { kind: 'invalid', code: '08P01', reason: 'startup packet: unterminated parameter name' };
    pos = name.end + 1;
    const value = cString(buf, pos, length);
    if (value === undefined) {
      return {
        kind: 'invalid',
        code: '08P01',
        reason: `startup packet: parameter "${name.text}" has no value`,
      };
    }
    pos = value.end + 1;
    params[name.text] = value.text;
  }
  if (pos !== length - 1)
    return { kind: 'invalid', code: '08P01', reason: 'startup packet: bytes after its terminator' };
  if (params.user === undefined)
    return { kind: 'invalid', code: '28000', reason: 'no PostgreSQL user name specified' };
  return { kind: 'startup', length, protocol: code, params };
}

/**
 * The startup packet of `packet` (a StartupMessage as readStartupPacket read it) with its
 * application_name set to `name` (added when it had none); the other parameters as they were.
 */
export function withApplicationName(
  packet: { protocol: number; params: Readonly<Record<string, string>> },
  name: string,
): Buffer {
  const params = { ...packet.params, application_name: name };
  const body = Buffer.concat([
    ...Object.entries(params).flatMap(([k, v]) => [Buffer.from(`${k}\0`), Buffer.from(`${v}\0`)]),
    Buffer.from([0]),
  ]);
  const head = Buffer.alloc(8);
  head.writeInt32BE(8 + body.length, 0);
  head.writeInt32BE(packet.protocol, 4);
  return Buffer.concat([head, body]);
}

function cString(buf: Buffer, start: number, end: number): { text: string; end: number } | undefined {
  const z = buf.indexOf(0, start);
  if (z < 0 || z >= end) return undefined;
  return { text: buf.toString('utf8', start, z), end: z };
}

/** Where a session's class may come from besides the port it connected to. */
export type ClassFrom = 'application_name' | 'option' | 'off';
export const CLASS_FROM: readonly ClassFrom[] = ['application_name', 'option', 'off'];
/** The run-time parameter a client sets (`options=-c plb.class=premium`) to pick its class. */
const CLASS_OPTION = 'plb.class';

export type ClassChoice =
  | { ok: true; cls: ServiceClass; from: 'port' | ClassFrom }
  | { ok: false; reason: string };

/**
 * The session's class: the listener's, unless `classFrom` reads one from the startup packet.
 * application_name: exactly `premium` or `freemium` (any other name keeps the port's class).
 * option: `-c plb.class=premium` (or `--plb.class=...`) in the `options` parameter; an unknown
 * class there is an error. The option goes on to the server untouched: a dotted name is a
 * placeholder variable PostgreSQL accepts, so `SHOW plb.class` answers it.
 */
export function chooseClass(
  params: Readonly<Record<string, string>>,
  listener: ServiceClass,
  classFrom: ClassFrom,
): ClassChoice {
  if (classFrom === 'application_name') {
    const cls = classOfApplicationName(params.application_name ?? '');
    if (cls !== undefined) return { ok: true, cls, from: classFrom };
  } else if (classFrom === 'option') {
    const value = optionValue(params.options ?? '', CLASS_OPTION);
    if (value !== undefined) {
      const v = value.trim().toLowerCase();
      if (v === 'premium' || v === 'freemium') return { ok: true, cls: v, from: classFrom };
      return { ok: false, reason: `${CLASS_OPTION} must be premium or freemium, got "${value}"` };
    }
  }
  return { ok: true, cls: listener, from: 'port' };
}

/** The class an application_name names (exactly premium or freemium, any case), or none. */
export function classOfApplicationName(name: string): ServiceClass | undefined {
  const v = name.trim().toLowerCase();
  return v === 'premium' || v === 'freemium' ? v : undefined;
}

/** Splits `options` as the server does: on whitespace, a backslash escaping the next character. */
export function splitOptions(text: string): string[] {
  const out: string[] = [];
  let cur = '';
  let inWord = false;
  for (let i = 0; i < text.length; i++) {
    const ch = text[i] as string;
    if (/\s/.test(ch)) {
      if (inWord) out.push(cur);
      cur = '';
      inWord = false;
    } else if (ch === '\\' && i + 1 < text.length) {
      cur += text[++i];
      inWord = true;
    } else {
      cur += ch;
      inWord = true;
    }
  }
  if (inWord) out.push(cur);
  return out;
}

/** The last value given to `name` by `-c name=v`, `-cname=v` or `--name=v` (names case-insensitive). */
export function optionValue(options: string, name: string): string | undefined {
  const words = splitOptions(options);
  let found: string | undefined;
  const take = (setting: string): void => {
    const eq = setting.indexOf('=');
    if (eq > 0 && setting.slice(0, eq).toLowerCase().replace(/-/g, '_') === name.toLowerCase())
      found = setting.slice(eq + 1);
  };
  for (let i = 0; i < words.length; i++) {
    const w = words[i] as string;
    if (w === '-c') take(words[++i] ?? '');
    else if (w.startsWith('--')) take(w.slice(2));
    else if (w.startsWith('-c')) take(w.slice(2));
  }
  return found;
}
