import type { Request } from 'express';
import type { ApiKeyService } from '../api-keys/service.ts';
import type { AccessTokens } from '../auth/tokens.ts';
import { AppError } from '../shared/errors.ts';

const BEARER = /^Bearer ([\x21-\x7e]{1,4096})$/i;

/**
 * A `bearer` route's caller (src/http/pipeline.ts): a JWT or an API key (a credential starting with
 * `sk_` is an API key). Any failure is the same 401.
 */
export function authenticate(apiKeys: ApiKeyService, tokens: AccessTokens) {
  return async (req: Request): Promise<void> => {
    const credential = BEARER.exec(req.get('authorization') ?? '')?.[1];
    if (!credential) throw new AppError('unauthorized');
    if (credential.startsWith('sk_')) {
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
