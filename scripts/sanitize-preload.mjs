// Loaded into every node of the sanitizer run (scripts/native-sanitize.sh, NODE_OPTIONS --import):
// libasan is preloaded into node processes only. PostgreSQL's tools hang at start with the ASan
// runtime preloaded (a lock taken during its initialisation), so LD_PRELOAD is taken out of this
// process's environment and given back to the children that are node (vitest's workers, a
// `plb proxy` a test starts), which load the sanitized relay and need the runtime first.
import { ChildProcess } from 'node:child_process';

const preload = process.env.LD_PRELOAD;
if (preload) {
  delete process.env.LD_PRELOAD;
  const spawn = ChildProcess.prototype.spawn;
  ChildProcess.prototype.spawn = function (options) {
    const env = (options.envPairs ?? []).filter((pair) => !pair.startsWith('LD_PRELOAD='));
    if (options.file === process.execPath) env.push(`LD_PRELOAD=${preload}`);
    return spawn.call(this, { ...options, envPairs: env });
  };
}
