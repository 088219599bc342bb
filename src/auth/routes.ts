import type { Request, Response } from 'express';
import { initServer } from '@ts-rest/express';
import { contract } from '../../contract/index.ts';
import type { Config } from '../config/index.ts';
import { withRequestId } from '../http/request-id.ts';
import { iso } from '../shared/time.ts';
import { principalOf } from './principal.ts';
import type { AuthService, Session } from './service.ts';

const REFRESH_COOKIE = 'refresh_token';
const COOKIE_PATH = '/v1/auth';

export function authRoutes(auth: AuthService, config: Pick<Config, 'production'>) {
  const s = initServer();

  /** Secure cookies need HTTPS; a developer on loopback has none, so only there it is relaxed. */
  const secureCookie = (req: Request) => config.production || !isLoopback(req);

  const sendSession = (req: Request, res: Response, session: Session) => {
    res.cookie(REFRESH_COOKIE, session.refreshToken, {
      httpOnly: true,
      sameSite: 'strict',
      secure: secureCookie(req),
      path: COOKIE_PATH,
      expires: session.refreshExpiresAt,
    });
    return withRequestId(req, { accessToken: session.accessToken, expiresAt: session.expiresAt, tokenType: 'Bearer' as const });
  };

  const cookieOf = (req: Request): string | undefined => {
    const value = (req.cookies as Record<string, unknown> | undefined)?.[REFRESH_COOKIE];
    return typeof value === 'string' ? value : undefined;
  };

  return s.router(contract.auth, {
    register: async ({ body, req, res }) => ({
      status: 201,
      body: sendSession(req, res, await auth.register(body.email, body.password)),
    }),
    login: async ({ body, req, res }) => ({
      status: 200,
      body: sendSession(req, res, await auth.login(body.email, body.password)),
    }),
    refresh: async ({ req, res }) => ({ status: 200, body: sendSession(req, res, await auth.refresh(cookieOf(req))) }),
    logout: async ({ req, res }) => {
      await auth.logout(cookieOf(req));
      res.clearCookie(REFRESH_COOKIE, { path: COOKIE_PATH, httpOnly: true, sameSite: 'strict', secure: secureCookie(req) });
      return { status: 204, body: undefined };
    },
    me: async ({ req }) => {
      const user = await auth.me(principalOf(req).userId);
      return { status: 200, body: withRequestId(req, { id: user.id, email: user.email, createdAt: iso(user.createdAt) }) };
    },
  });
}

function isLoopback(req: Request): boolean {
  const host = req.hostname;
  return host === 'localhost' || host === '127.0.0.1' || host === '::1' || host === '[::1]';
}
