import { describe, expect, it } from 'vitest';
import { kernelTickMs } from '../../src/bench/calibrate/kernel-tick.js';

describe('kernelTickMs', () => {
  it('reads CONFIG_HZ from a kernel config', () => {
    expect(kernelTickMs('CONFIG_NO_HZ=y\nCONFIG_HZ_250=y\nCONFIG_HZ=250\n')).toEqual({ sliceMs: 4, hz: 250 });
    expect(kernelTickMs('CONFIG_HZ=1000')).toEqual({ sliceMs: 1, hz: 1000 });
  });

  it('gives null when the config does not say', () => {
    expect(kernelTickMs(null)).toBeNull();
    expect(kernelTickMs('CONFIG_HZ_250=y\n')).toBeNull();
  });
});
