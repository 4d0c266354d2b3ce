// The Docker driver's public surface (select.ts loads this module lazily).
export { createDockerDriver, dockerAvailable, DockerDriver, type DockerDriverOptions } from './driver.js';
