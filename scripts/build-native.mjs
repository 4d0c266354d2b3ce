// Builds plb proxy's native relay (native/*.c) with the C compiler and the headers Node ships.
// Not node-gyp: it would fetch the headers over the network, and two C files need one compiler
// call. Optional: without a compiler or headers the proxy relays in JavaScript (one line says so).
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const src = ['relay.c', 'loop.c', 'front.c', 'relay-js.c'].map((f) => join(root, 'native', f));
const out = join(root, 'native', 'build', 'relay.node');
const headers = [
  resolve(process.execPath, '..', '..', 'include', 'node'),
  '/usr/include/node',
  '/usr/local/include/node',
].find((d) => existsSync(join(d, 'node_api.h')));
const cc = process.env.CC ?? 'cc';

if (process.platform !== 'linux') {
  console.log(`native relay: not built (${process.platform}: the relay is Linux's epoll); the proxy relays in JavaScript`);
} else if (!headers) {
  console.log('native relay: not built (no node_api.h next to this Node); the proxy relays in JavaScript');
} else {
  mkdirSync(dirname(out), { recursive: true });
  const args = ['-O2', '-fPIC', '-shared', '-pthread', '-Wall', '-Wextra', '-Wno-unused-parameter'];
  try {
    execFileSync(cc, [...args, '-I', headers, '-o', out, ...src], { stdio: ['ignore', 'inherit', 'inherit'] });
    console.log(`native relay: built ${out.slice(root.length + 1)}`);
  } catch (err) {
    const why = err.code === 'ENOENT' ? `no C compiler (${cc})` : 'the compiler failed';
    console.log(`native relay: not built (${why}); the proxy relays in JavaScript`);
    if (process.env.CI === 'true') process.exit(1);
  }
}
