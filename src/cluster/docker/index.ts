// The Docker driver's public surface (select.ts and bench/environment.ts load this module lazily).
export { createDockerDriver, dockerAvailable, DockerDriver, type DockerDriverOptions } from './driver.js';
export { containerName, LABEL_CLUSTER } from './container.js';
