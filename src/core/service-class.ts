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
