// The library's public exports.
export * from './errors.js';
export * from './router/types.js';
export type * from './cluster/driver.js';
export type * from './faults/types.js';
export type * from './metrics/types.js';
