// Preloaded by benchmarks/sim-speed.ts: writes this process's peak RSS (KiB) to $PLB_RSS_FILE at exit.
process.on('exit', () => {
  if (process.env.PLB_RSS_FILE) require('node:fs').writeFileSync(process.env.PLB_RSS_FILE, String(process.resourceUsage().maxRSS));
});
