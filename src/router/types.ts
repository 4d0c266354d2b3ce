export type ServiceClass = 'premium' | 'freemium';
export type Role = 'premium' | 'mixed' | 'freemium';
export interface RoleVector {
  premium: number;
  mixed: number;
  freemium: number;
}
export const SERVICE_CLASSES: readonly ServiceClass[] = ['premium', 'freemium'];
