import pg from 'pg';
import { describe, expect, it } from 'vitest';
import { classifyFailure, isDeathEvidence } from '../../src/core/failure-cause.js';
import { HealthTracker } from '../../src/cluster/health.js';
import { PlbError } from '../../src/core/errors.js';

/** A server error as pg reports it (DatabaseError with SQLSTATE and severity). */
function dbError(code: string, message = 'server says no'): pg.DatabaseError {
  const e = new pg.DatabaseError(message, 0, 'error');
  e.code = code;
  e.severity = 'FATAL';
  return e;
}

function sysError(code: string): Error {
  return Object.assign(new Error(`connect ${code} 127.0.0.1:5432`), { code });
}

describe('classifyFailure', () => {
  it.each([
    ['53300 too_many_connections', dbError('53300', 'sorry, too many clients already'), 'overloaded'],
    ['57P03 cannot_connect_now', dbError('57P03', 'the database system is starting up'), 'overloaded'],
    ['53200 out_of_memory', dbError('53200'), 'overloaded'],
    [
      '57P01 admin_shutdown',
      dbError('57P01', 'terminating connection due to administrator command'),
      'unreachable',
    ],
    ['57P02 crash_shutdown', dbError('57P02'), 'unreachable'],
    ['08006 connection_failure', dbError('08006'), 'unreachable'],
    ['57014 query_canceled', dbError('57014', 'canceling statement due to statement timeout'), 'slow'],
    ['42P01 undefined_table', dbError('42P01', 'relation does not exist'), 'other'],
    ['28P01 bad password', dbError('28P01'), 'other'],
    ['ECONNREFUSED', sysError('ECONNREFUSED'), 'unreachable'],
    ['ECONNRESET', sysError('ECONNRESET'), 'unreachable'],
    ['EPIPE', sysError('EPIPE'), 'unreachable'],
    ['ETIMEDOUT', sysError('ETIMEDOUT'), 'slow'],
    ['pg: terminated unexpectedly', new Error('Connection terminated unexpectedly'), 'unreachable'],
    ['pg: connect timeout', new Error('Connection terminated due to connection timeout'), 'slow'],
    ['pg: query_timeout', new Error('Query read timeout'), 'slow'],
    ['anything else', new Error('something odd'), 'other'],
    ['not an error', 'a string', 'other'],
  ] as const)('%s -> %s', (_name, err, cause) => {
    expect(classifyFailure(err)).toBe(cause);
  });

  it('looks through PlbError causes: the innermost error decides', () => {
    const wrapped = new PlbError('CONNECT_FAILED', 'connect to r3 failed: sorry, too many clients already', {
      cause: dbError('53300'),
    });
    expect(classifyFailure(wrapped)).toBe('overloaded');
    const dead = new PlbError('SESSION_FAILED', 'query on r1 failed', {
      cause: new Error('Connection terminated unexpectedly'),
    });
    expect(classifyFailure(dead)).toBe('unreachable');
  });

  it('only unreachable is death evidence', () => {
    expect(isDeathEvidence('unreachable')).toBe(true);
    expect(isDeathEvidence('overloaded')).toBe(false);
    expect(isDeathEvidence('slow')).toBe(false);
    expect(isDeathEvidence('other')).toBe(false);
  });
});

describe('HealthTracker', () => {
  it('falls after `fall` consecutive failures; an answered check in between resets the count', () => {
    const t = new HealthTracker(['r1'], 2, 2);
    expect(t.observe('r1', false)).toBeNull();
    expect(t.observe('r1', true)).toBeNull();
    expect(t.observe('r1', false)).toBeNull();
    expect(t.observe('r1', false)).toBe('down');
    expect(t.isHealthy('r1')).toBe(false);
    expect(t.observe('r1', true)).toBeNull();
    expect(t.observe('r1', true)).toBe('up');
  });
});
