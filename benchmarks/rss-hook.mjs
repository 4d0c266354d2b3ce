// Preloaded by benchmarks/sim-speed.ts: writes this process's peak RSS (KiB) to $PLB_RSS_FILE at exit.
import { writeFileSync } from 'node:fs';

process.on('exit', () => {
  if (process.env.PLB_RSS_FILE)
    writeFileSync(process.env.PLB_RSS_FILE, String(process.resourceUsage().maxRSS));
});
