import { describe, expect } from 'vitest';
import { registerUser } from './support/factories.ts';
import { test as it } from './support/fixtures.ts';

describe('smoke', () => {
  it('registers and reads the current user', async ({ api }) => {
    const user = await registerUser(api);
    const me = await api.get('/v1/auth/me', { token: user.token });
    expect(me.status).toBe(200);
    expect(me.body.email).toBe(user.email);
  });
});
