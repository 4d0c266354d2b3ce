// Preloaded by benchmarks/sim-speed.ts: at exit, writes this process's peak RSS (KiB) and its CPU
// (user and system µs, every thread: the collector's and compiler's too) to $PLB_RSS_FILE as JSON.
import { writeFileSync } from 'node:fs';

process.on('exit', () => {
  if (!process.env.PLB_RSS_FILE) return;
  const u = process.resourceUsage();
  writeFileSync(
    process.env.PLB_RSS_FILE,
    JSON.stringify({ maxRssKiB: u.maxRSS, userUs: u.userCPUTime, systemUs: u.systemCPUTime }),
  );
});
