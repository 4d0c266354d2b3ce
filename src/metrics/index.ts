export * from './types.js';
export * from './math.js';
export * from './phases.js';
export {
  LATENCY_HIGHEST_US,
  newLatencyHistogram,
  toLatencyUs,
  histogramLog,
  readHistogramLog,
} from './hdr/histogram.js';
export { MetricsStore } from './store/store.js';
export { summarizePhases, detectionRecords, type PhaseHistogram } from './summary/summary.js';
export * from './store/timeline.js';
export * from './store/run-writer.js';
export * from './store/load-run.js';
