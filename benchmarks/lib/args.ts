/** The value after `--name` on the benchmark's command line; undefined when the flag is absent. */
export function option(name: string): string | undefined {
  const argv = process.argv;
  const i = argv.indexOf(`--${name}`, 2);
  return i >= 0 ? argv[i + 1] : undefined;
}
