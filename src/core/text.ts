/**
 * Text from users (plan names, file paths, commands of lock holders) reaches the terminal: control
 * characters in it could move the cursor, recolour or fake lines, so they are shown escaped.
 */
// eslint-disable-next-line no-control-regex
const CONTROL_RE = /[\u0000-\u001f\u007f-\u009f]/g;

/** True when s holds a C0/C1 control character (newline and tab included). */
export function hasControl(s: string): boolean {
  CONTROL_RE.lastIndex = 0;
  return CONTROL_RE.test(s);
}

/** s with every control character as \n, \t, \r or \xHH / \u00HH. */
export function escapeControl(s: string): string {
  return s.replace(CONTROL_RE, (c) => {
    if (c === '\n') return '\\n';
    if (c === '\t') return '\\t';
    if (c === '\r') return '\\r';
    return `\\x${c.charCodeAt(0).toString(16).padStart(2, '0')}`;
  });
}

/** Multi-line text with control characters escaped inside each line (progress lines, paths). */
export function escapeLines(s: string): string {
  return s.split('\n').map(escapeControl).join('\n');
}
