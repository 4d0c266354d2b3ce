// The Docker driver's public surface (select.ts and bench/environment.ts load this module lazily).
export {
  containerName,
  createDockerDriver,
  dockerAvailable,
  LABEL_CLUSTER,
  DockerDriver,
  type DockerDriverOptions,
} from './driver.js';
