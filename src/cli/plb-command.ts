import { Command, Errors } from '@oclif/core';
import { errorJson, errorLine, exitCodeOf } from '../core/fail.js';
import { escapeLines } from '../core/text.js';

/**
 * What every plb command shares: --json (oclif's enableJsonFlag: run() returns the object to print)
 * and one way to fail. A failure is one line on stderr, `Error: <message> (hint: ...)`; with --json
 * it is `{"error":{"code","message","hint"}}` on stdout instead, so a script reading stdout always
 * gets JSON. Either way the exit code is the one README.md lists (1 bad input, 2 usage, 3 tolerance).
 */
export abstract class PlbCommand extends Command {
  static override enableJsonFlag = true;

  /** Plain JSON, as rendered, when piped; names from disk escaped at a terminal. No colours. */
  override logJson(json: unknown): void {
    const text = `${JSON.stringify(json, null, 2)}\n`;
    process.stdout.write(process.stdout.isTTY ? escapeLines(text) : text);
  }

  protected override async catch(err: Error & { exitCode?: number }): Promise<never> {
    // this.exit() inside run() (a chosen exit code) is not a failure to report again.
    if (err instanceof Errors.ExitError) throw err;
    if (this.jsonEnabled()) this.logJson(errorJson(err));
    else process.stderr.write(`Error: ${errorLine(err)}\n`);
    return this.exit(exitCodeOf(err));
  }
}
