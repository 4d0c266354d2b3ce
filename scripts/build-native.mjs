// Builds plb proxy's native relay (native/*.c) with the C compiler and the headers Node ships, and
// plb-delayer (native/delayer.c, the network fault `delay` on a kernel without netem) against
// libnetfilter_queue.
// Not node-gyp: it would fetch the headers over the network, and a few C files need one compiler
// call. Optional: without a compiler or headers the proxy relays in JavaScript (one line says so).
// Its messages go to stderr: `npm pack --json` runs it (prepack) and prints only JSON on stdout.
//
// PLB_NATIVE_SANITIZE=1 builds native/build/relay-asan.node (and plb-delayer-asan) instead, with AddressSanitizer and
// UndefinedBehaviorSanitizer (docs/development.md: "Native relay under sanitizers"); the proxy
// loads it when PLB_NATIVE_RELAY names it, in a node started with libasan preloaded.
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');
// The relay (relay.h) and its Node-API glue (relay-js.h: js-args.c, front-js.c, relay-js.c).
const relaySrc = ['relay.c', 'events.c', 'loop.c', 'front.c', 'front-dial.c', 'fault.c']
  .concat(['js-args.c', 'front-js.c', 'relay-js.c'])
  .map((f) => join(root, 'native', f));
const sanitize = process.env.PLB_NATIVE_SANITIZE === '1';
const out = join(root, 'native', 'build', sanitize ? 'relay-asan.node' : 'relay.node');
const headers = [
  resolve(process.execPath, '..', '..', 'include', 'node'),
  '/usr/include/node',
  '/usr/local/include/node',
].find((d) => existsSync(join(d, 'node_api.h')));
const cc = process.env.CC ?? 'cc';
const say = (line) => console.error(`native relay: ${line}`);

// An ignored result of a MUSTCHECK call (relay.h) fails the build.
const warnings = ['-Wall', '-Wextra', '-Wno-unused-parameter', '-Werror=unused-result'];
const optimize = sanitize
  ? ['-O1', '-g', '-fsanitize=address,undefined', '-fno-sanitize-recover=all', '-fno-omit-frame-pointer']
  : ['-O2'];

if (process.platform !== 'linux') {
  say(`not built (${process.platform}: the relay is Linux's epoll); the proxy relays in JavaScript`);
} else if (!headers) {
  say('not built (no node_api.h next to this Node); the proxy relays in JavaScript');
} else {
  mkdirSync(dirname(out), { recursive: true });
  const args = [...optimize, '-fPIC', '-shared', '-pthread', ...warnings];
  try {
    // The compiler's own output (warnings) to stderr as well.
    execFileSync(cc, [...args, '-I', headers, '-o', out, ...relaySrc], { stdio: ['ignore', 2, 'inherit'] });
    say(`built ${out.slice(root.length + 1)}`);
  } catch (err) {
    const why = err.code === 'ENOENT' ? `no C compiler (${cc})` : 'the compiler failed';
    say(`not built (${why}); the proxy relays in JavaScript`);
    if (process.env.CI === 'true' || sanitize) process.exit(1);
  }
}

// The delayer: a program of its own (plb starts it as root), linked against libnetfilter_queue.
// Without the library's headers plb runs, and the fault `delay` is refused before a run starts.
const delayer = join(root, 'native', 'build', sanitize ? 'plb-delayer-asan' : 'plb-delayer');
const sayDelayer = (line) => console.error(`native delayer: ${line}`);
if (process.platform !== 'linux') {
  sayDelayer(`not built (${process.platform}: NFQUEUE is Linux's); network fault delay is unavailable`);
} else if (!existsSync('/usr/include/libnetfilter_queue/libnetfilter_queue.h')) {
  sayDelayer('not built (no libnetfilter_queue headers: apt-get install libnetfilter-queue-dev); network fault delay is unavailable');
  if (process.env.CI === 'true') process.exit(1);
} else {
  mkdirSync(dirname(delayer), { recursive: true });
  try {
    execFileSync(
      cc,
      [...optimize, ...warnings, '-o', delayer, join(root, 'native', 'delayer.c'), '-lnetfilter_queue', '-lnfnetlink'],
      { stdio: ['ignore', 2, 'inherit'] },
    );
    sayDelayer(`built ${delayer.slice(root.length + 1)}`);
  } catch (err) {
    const why = err.code === 'ENOENT' ? `no C compiler (${cc})` : 'the compiler failed';
    sayDelayer(`not built (${why}); network fault delay is unavailable`);
    if (process.env.CI === 'true' || sanitize) process.exit(1);
  }
}
