import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { registerUser } from './support/factories.ts';
import { startTestService, type TestService } from './support/service.ts';

let service: TestService;
beforeAll(async () => {
  service = await startTestService();
});
afterAll(() => service?.stop());

describe('smoke', () => {
  it('registers and reads the current user', async () => {
    const user = await registerUser(service.api);
    const me = await service.api.get('/v1/auth/me', { token: user.token });
    expect(me.status).toBe(200);
    expect(me.body.email).toBe(user.email);
  });
});
