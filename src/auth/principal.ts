import { AppError } from '../shared/errors.ts';
import type { ApiKeyEnvironment } from '../../contract/enums.ts';

/** Who a request acts as. API keys act as their owner; the key and environment go to the audit log. */
export interface Principal {
  userId: string;
  credential: 'jwt' | 'api_key';
  apiKeyId: string | null;
  environment: ApiKeyEnvironment | null;
}

declare module 'express-serve-static-core' {
  interface Request {
    principal?: Principal;
  }
}

export function principalOf(req: { principal?: Principal | undefined }): Principal {
  if (!req.principal) throw new AppError('unauthorized');
  return req.principal;
}

/** The actor recorded in audit entries: the API key when one was used, else the user. */
export function actorOf(principal: Principal): string {
  return principal.apiKeyId ?? principal.userId;
}

export function auditContext(principal: Principal): Record<string, unknown> {
  return principal.credential === 'api_key'
    ? { via: 'api_key', apiKeyId: principal.apiKeyId, environment: principal.environment }
    : { via: 'jwt' };
}
