export * from './types.js';
export * from './math.js';
export * from './phases.js';
export {
  LATENCY_HIGHEST_US,
  newLatencyHistogram,
  toLatencyUs,
  histogramLog,
  readHistogramLog,
} from './histogram.js';
export { MetricsStore } from './store.js';
export { summarizePhases, detectionRecords, type PhaseHistogram } from './summary.js';
export * from './timeline.js';
export * from './run-writer.js';
export * from './load-run.js';
