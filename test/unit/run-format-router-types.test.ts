// The router is pure and sits beside run-format, so neither imports the other; config.json's
// schemas of the router's own types must still say what the router's interfaces say.
import { describe, expect, it } from 'vitest';
import type { z } from 'zod';
import type { BorrowThresholds, PlbReadings, RoleVector } from '../../src/router/types.js';
import { borrowThresholdsSchema, readingsSchema, roleVectorSchema } from '../../src/run-format/config.js';
import type { SameType } from '../../src/run-format/type-check.js';

const _roles: SameType<z.infer<typeof roleVectorSchema>, RoleVector> = true;
const _readings: SameType<z.infer<typeof readingsSchema>, PlbReadings> = true;
const _borrow: SameType<z.infer<typeof borrowThresholdsSchema>, BorrowThresholds> = true;

describe("config.json's router types", () => {
  it('are the router interfaces (checked by the compiler)', () => {
    expect([_roles, _readings, _borrow]).toEqual([true, true, true]);
  });
});
