/** The two service classes a session is tagged with (DESIGN.md): premium is served first. */
export type ServiceClass = 'premium' | 'freemium';

export const SERVICE_CLASSES: readonly ServiceClass[] = ['premium', 'freemium'];

/**
 * The application_name a session of cls connects with: how the replica's own pg_stat_activity
 * tells the classes apart (the `replica` router view reads it).
 */
export function classApplicationName(cls: ServiceClass): string {
  return `plb-${cls}`;
}

/** PostgreSQL keeps this many bytes of an application_name (NAMEDATALEN - 1). */
const APPLICATION_NAME_BYTES = 63;

/**
 * The application_name a proxied session of cls reaches its replica with: the class's own name
 * (as above), then `:` and the client's name, cut to PostgreSQL's 63 bytes at a character
 * boundary, so pg_stat_activity tells the class and the client still finds its own name there.
 */
export function markApplicationName(cls: ServiceClass, original: string | undefined): string {
  const mark = classApplicationName(cls);
  if (original === undefined || original === '') return mark;
  let out = `${mark}:`;
  let bytes = Buffer.byteLength(out);
  for (const ch of original) {
    const n = Buffer.byteLength(ch);
    if (bytes + n > APPLICATION_NAME_BYTES) break;
    out += ch;
    bytes += n;
  }
  return out;
}
