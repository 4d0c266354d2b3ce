// The virtual clock alone, no model: what an instant costs before any simulated work. Each of
// --timers live timer chains sets its next timer (uniform in [0, 1000) ms) when it fires, so the
// heap holds as many timers as a simulation with that many waiting sessions and jobs does (K=1000,
// T=100,000: a few hundred thousand). Printed per size: events, instants, CPU s (user + system of
// this process), and ns of CPU an instant: the floor every simulated query's 4 to 5 instants pay.
//
// Run: node --import tsx benchmarks/sim-clock-floor.ts [--timers 1000,100000,400000] [--events 10000000]
import Table from 'cli-table3';
import { VirtualClock } from '../src/clock/virtual.js';
import type { TimerTask } from '../src/clock/index.js';
import { Rng } from '../src/core/rng.js';
import { option } from './lib/args.js';

const sizes = (option('timers') ?? '1000,100000,400000').split(',').map(Number);
const events = Number(option('events') ?? '10000000');
for (const [name, v] of [...sizes.map((s) => ['--timers', s] as const), ['--events', events] as const])
  if (!Number.isInteger(v) || v < 1) throw new Error(`${name}: expected whole numbers >= 1`);

interface Floor {
  fired: number;
  instants: number;
  cpuS: number;
}

async function measure(timers: number): Promise<Floor> {
  const clock = new VirtualClock();
  const rng = new Rng(7);
  let left = events;
  let done: () => void = () => undefined;
  const chain: TimerTask = {
    cancelled: false,
    onTimer(): void {
      if (--left > 0) clock.after(rng.next() * 1000, chain);
      else done();
    },
  };
  const t0 = process.cpuUsage();
  await clock.run(
    () =>
      new Promise<void>((resolve) => {
        done = resolve;
        for (let i = 0; i < timers; i++) clock.after(rng.next() * 1000, chain);
      }),
  );
  const u = process.cpuUsage(t0);
  return { fired: clock.fired, instants: clock.instants, cpuS: (u.user + u.system) / 1e6 };
}

const table = new Table({
  head: ['live timers', 'events', 'instants', 'CPU s', 'ns CPU an instant'],
  style: { head: [], border: [] },
});
for (const timers of sizes) {
  const f = await measure(timers);
  table.push([
    timers.toLocaleString('en'),
    f.fired.toLocaleString('en'),
    f.instants.toLocaleString('en'),
    f.cpuS.toFixed(2),
    ((f.cpuS * 1e9) / f.instants).toFixed(0),
  ]);
}
process.stdout.write(`${table.toString()}\n`);
