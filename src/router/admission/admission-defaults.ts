/** Admission's defaults where nothing is told (router/admission/admission.ts). */
import { DEFAULT_MIN_SHARE } from './slo-guard.js';
import type { AdmissionOptions } from './admission-types.js';

/** The share of a premium replica's limit kept from freemium unless told otherwise (--admission-premium-reserve). */
export const DEFAULT_PREMIUM_RESERVE = 0.1;

/** Without options (a library user, `plan show`): a limit that rarely binds, a 10 s queue timeout, the guard at 1.2 x p95. */
const DEFAULT_ADMISSION: Omit<AdmissionOptions, 'slowStartMs'> = {
  limits: { mode: 'fixed', limit: 1000 },
  queue: { capacity: 10_000, timeoutMs: 10_000 },
  premiumReserve: DEFAULT_PREMIUM_RESERVE,
  freemiumReserve: DEFAULT_MIN_SHARE,
  guard: { target: { kind: 'relative', factor: 1.2 } },
};

/** The admission options of a plb-admit or lc-queue router. */
export function admissionFor(
  options: { admission?: Omit<AdmissionOptions, 'slowStartMs'> },
  slowStartMs: number,
): AdmissionOptions {
  return { ...(options.admission ?? DEFAULT_ADMISSION), slowStartMs };
}
