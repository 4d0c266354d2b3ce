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

export const statSchema = z
  .object({
    median: z.number().nullable(),
    q1: z.number().nullable(),
    q3: z.number().nullable(),
    n: z.number().describe('non-null values the stat is made of'),
  })
  // An id: the JSON Schema defines it once and refers to it (it is used ~60 times).
  .meta({ id: 'Stat', description: 'Median and interquartile range over the repeats' });
