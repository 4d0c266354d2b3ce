/** `plb proxy` flags of its operation (drain.ts), each checked as it is read. */
import { checkedText, durationMsFlag } from '../../cli/flags.js';

export const adminFlags = {
  'drain-timeout': checkedText((v, flag) => durationMsFlag(flag, v))({
    description:
      'on SIGUSR2 or POST /drain (--metrics-port): the listeners close and open sessions may go on this long before they are closed (57P01); 0: until they end',
    default: '0',
    helpGroup: 'PROXY',
  }),
};

export interface AdminFlagValues {
  'drain-timeout'?: string | undefined;
}

export interface AdminConfig {
  /** 0: a drain waits until the last session ends. */
  drainTimeoutMs: number;
}

export function parseAdminFlags(f: AdminFlagValues): AdminConfig {
  return { drainTimeoutMs: durationMsFlag('drain-timeout', f['drain-timeout'] ?? '0') };
}
