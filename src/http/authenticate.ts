import type { Request } from 'express';
import type { ApiKeyEnvironment } from '../../contract/enums.ts';
import { AppError } from '../shared/errors.ts';

/** Checks an API key (the api-keys feature): the key's record while it is valid, else null. */
export interface ApiKeyCheck {
  authenticate(rawKey: string): Promise<{ id: string; ownerId: string; environment: ApiKeyEnvironment } | null>;
}

/** Checks an access token (the auth feature): its user's id while it is valid, else null. */
export interface AccessTokenCheck {
  verify(token: string): Promise<string | null>;
}

const BEARER = /^Bearer ([\x21-\x7e]{1,4096})$/i;

const accessTokenRequired = () =>
  new AppError('unauthorized', {
    message: 'This operation needs a signed-in user: send an access token, not an API key.',
    details: { reason: 'access_token_required' },
  });

/**
 * A `bearer` route's caller (src/http/pipeline.ts): a JWT or an API key (a credential starting with
 * `sk_` is an API key); an `access_token` route's caller: a JWT only. Any failure is a 401.
 */
export function authenticate(apiKeys: ApiKeyCheck, tokens: AccessTokenCheck) {
  return async (req: Request, kind: 'bearer' | 'access_token' = 'bearer'): Promise<void> => {
    const credential = BEARER.exec(req.get('authorization') ?? '')?.[1];
    if (!credential) throw new AppError('unauthorized');
    if (credential.startsWith('sk_')) {
      // Creating and revoking API keys: a leaked key must not be able to mint its own successor.
      // 401 rather than 403: the closed set of codes (decisions.md) has none for 403.
      if (kind === 'access_token') throw accessTokenRequired();
      const key = await apiKeys.authenticate(credential);
      if (!key) throw new AppError('unauthorized', { message: 'The API key is not valid or was revoked.' });
      req.principal = { userId: key.ownerId, credential: 'api_key', apiKeyId: key.id, environment: key.environment };
    } else {
      const userId = await tokens.verify(credential);
      if (!userId) throw new AppError('unauthorized', { message: 'The access token is not valid or has expired.' });
      req.principal = { userId, credential: 'jwt', apiKeyId: null, environment: null };
    }
  };
}
