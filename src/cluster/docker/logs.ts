import { Readable, Writable } from 'node:stream';
import { finished } from 'node:stream/promises';
import type Docker from 'dockerode';

/**
 * A container's log output as text, stdout and stderr in the order written. Docker sends them
 * multiplexed in frames (8-byte headers); docker-modem's demuxStream takes the frames apart, and
 * passes a TTY container's plain stream through as it is.
 */
export async function logText(modem: Docker['modem'], logs: Buffer | NodeJS.ReadableStream): Promise<string> {
  const source = Buffer.isBuffer(logs) ? Readable.from([logs]) : logs;
  const chunks: Buffer[] = [];
  const sink = new Writable({
    write(chunk: Buffer, _enc, done) {
      chunks.push(chunk);
      done();
    },
  });
  modem.demuxStream(source, sink, sink);
  await finished(source);
  sink.end();
  await finished(sink);
  return Buffer.concat(chunks).toString('utf8');
}
