/** The two service classes a session is tagged with (DESIGN.md): premium is served first. */
export type ServiceClass = 'premium' | 'freemium';

export const SERVICE_CLASSES: readonly ServiceClass[] = ['premium', 'freemium'];
