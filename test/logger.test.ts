/**
 * What the service's logger censors (src/shared/logger.ts): secret fields and credential headers at
 * a line's top level and one level down, in lines and in a child logger's bindings, errors included.
 */
import { Writable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { createLogger, LOG_CENSOR } from '../src/shared/logger.ts';

function capture() {
  const lines: Record<string, any>[] = [];
  const stream = new Writable({
    write(chunk, _encoding, done) {
      for (const line of String(chunk).split('\n').filter(Boolean)) lines.push(JSON.parse(line));
      done();
    },
  });
  return { logger: createLogger('info', stream), lines };
}

describe('the logger', () => {
  it('censors secret fields at the top level and one level down, and leaves the rest as it was', () => {
    const { logger, lines } = capture();
    const store = { id: 'rs_1', accessToken: 'shpat_secret', shopDomain: 'a.example' };
    logger.info({ store, password: 'hunter2', endpoint: { secretEncrypted: 'v1.x', url: 'https://x' }, attempt: 2 }, 'line');
    expect(lines[0]).toMatchObject({
      store: { id: 'rs_1', accessToken: LOG_CENSOR, shopDomain: 'a.example' },
      password: LOG_CENSOR,
      endpoint: { secretEncrypted: LOG_CENSOR, url: 'https://x' },
      attempt: 2,
      msg: 'line',
    });
    // The caller's object is not changed.
    expect(store.accessToken).toBe('shpat_secret');
  });

  it('censors credential headers of any object', () => {
    const { logger, lines } = capture();
    logger.info({ req: { method: 'GET', headers: { authorization: 'Bearer abc', cookie: 'refresh_token=r', accept: '*/*' } }, call: { headers: { 'x-platform-access-token': 't' } } }, 'line');
    expect(lines[0]!.req).toEqual({ method: 'GET', headers: { authorization: LOG_CENSOR, cookie: LOG_CENSOR, accept: '*/*' } });
    expect(lines[0]!.call.headers['x-platform-access-token']).toBe(LOG_CENSOR);
  });

  it('censors an error carrying a secret and keeps its message and stack', () => {
    const { logger, lines } = capture();
    const error = Object.assign(new Error('refused'), { accessToken: 'shpat_secret', status: 401 });
    logger.error({ err: error }, 'call failed');
    expect(lines[0]!.err).toMatchObject({ type: 'Error', message: 'refused', accessToken: LOG_CENSOR, status: 401 });
    expect(lines[0]!.err.stack).toContain('refused');
  });

  it('never shows what an error it censors kept out of sight (a cause with a secret of its own)', () => {
    const { logger, lines } = capture();
    const error = Object.assign(new Error('refused', { cause: { refreshToken: 'rt_secret' } }), { accessToken: 'shpat_secret' });
    logger.error({ err: error }, 'call failed');
    expect(lines[0]!.err).toMatchObject({ message: 'refused', accessToken: LOG_CENSOR });
    expect(JSON.stringify(lines)).not.toContain('rt_secret');
  });

  it('censors a child logger\'s bindings', () => {
    const { logger, lines } = capture();
    logger.child({ job_id: 'job_1', store: { webhookSecret: 'whsec_x' }, refreshToken: 'r' }).info('line');
    expect(lines[0]).toMatchObject({ job_id: 'job_1', store: { webhookSecret: LOG_CENSOR }, refreshToken: LOG_CENSOR });
    expect(JSON.stringify(lines)).not.toContain('whsec_x');
  });

  it('keeps a child\'s parent: its bindings and serializers reach the grandchild (pino-http\'s request logger)', () => {
    const { logger, lines } = capture();
    const grandchild = logger.child({ request_id: 'req_1' }, { serializers: { res: (res: { statusCode: number }) => ({ statusCode: res.statusCode }) } }).child({ job_id: 'job_1' });
    grandchild.info({ res: { statusCode: 201, headers: { 'set-cookie': 'refresh_token=r' } } }, 'done');
    expect(lines[0]).toMatchObject({ request_id: 'req_1', job_id: 'job_1', res: { statusCode: 201 } });
    expect(lines[0]!.res.headers).toBeUndefined();
  });
});
