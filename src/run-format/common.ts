// Pieces several run-format schemas share.
import { z } from 'zod';
import type { ServiceClass } from '../core/service-class.js';
import type { SameType } from './type-check.js';

export const serviceClassSchema = z.enum(['premium', 'freemium']);
const _classes: SameType<z.infer<typeof serviceClassSchema>, ServiceClass> = true;

/** One value per service class, every class present. */
export function serviceClassRecord<T extends z.ZodType>(value: T) {
  return z.object({ premium: value, freemium: value });
}

/** Share of clients (or sessions) per class: percents (25:75) or fractions. */
export const mixSchema = z.object({ premium: z.number(), freemium: z.number() });
