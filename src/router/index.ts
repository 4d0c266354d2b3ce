// The router: pure (no I/O, no timers, no clock; nowMs is passed in).
export type * from './types.js';
export { SERVICE_CLASSES, type ServiceClass } from '../core/service-class.js';
export { buildRouter, createRouter } from './router.js';
export { maxLagFactor } from './max-lag.js';
export { BORROW_DWELL_MS, BorrowDwell } from './borrow-dwell.js';
export { chooseZone, clientZone, DEFAULT_ZONE_SPILL, poolPressure, ZonedRouter } from './zones.js';
export {
  DEFAULT_PARTITION,
  DEFAULT_REFERENCE,
  formatRoleVector,
  fullReference,
  partitionFor,
  referenceTarget,
  roleVectorTotal,
  targetRoleTable,
  targetRoleVector,
  type TargetRow,
} from './role-vector.js';
export {
  canonicalRole,
  chooseRepairDonor,
  countRoles,
  decidePlbAdmission,
  DEFAULT_BORROWING,
  otherClass,
  plbEligible,
  rebalanceSteps,
  repairTarget,
  repairToTarget,
  resolveBorrowing,
  ROLES,
  shouldBorrow,
  shouldReturn,
  type PlbAdmissionDecision,
  type PlbReplicaView,
  type RebalanceStep,
  type RoleMove,
} from './plb-rules.js';
export {
  DEFAULT_READINGS,
  formatReadings,
  readingsName,
  READING_CHOICES,
  READING_PRESETS,
  resolveReadings,
} from './readings.js';
export { admissionKey, DEFAULT_SLOW_START_MS, MIN_RAMP, replicaLoad, slowStartRamp } from './slow-start.js';
export { describeStrategies, STRATEGIES, STRATEGY_NAMES, type StrategyInfo } from './strategies.js';
export { isStrategyName } from './strategy-registry.js';
export {
  AdmissionQueue,
  QUEUE_ORDER,
  type AdmissionQueueOptions,
  type QueuedItem,
} from './admission/admission-queue.js';
