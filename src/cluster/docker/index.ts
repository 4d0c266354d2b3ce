// The Docker driver's public surface (select.ts loads this module lazily).
export {
  createDockerDriver,
  dockerAvailable,
  DockerDriver,
  containerName,
  serverIds,
  LABEL_CLUSTER,
  LABEL_SERVER,
  LABEL_VERSION,
  type DockerDriverOptions,
} from './driver.js';
export { CpuReader, engineIsLocal } from './cpu.js';
