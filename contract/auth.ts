import { z } from 'zod';
import { auth, authErrors, bodyErrors, c, errorResponse, errors, openApi, RequestId, Timestamp } from './common.ts';

const Credentials = z.object({
  email: z.string().trim().toLowerCase().max(320).email(),
  password: z.string().min(8).max(256),
});

const Session = openApi(z.object({
  accessToken: z.string().describe('JWT (HS256), valid for 15 minutes.'),
  expiresAt: z.number().int().describe('Expiry of the access token, Unix seconds.'),
  tokenType: z.literal('Bearer'),
  request_id: RequestId,
}), { title: 'Session' });

const Me = openApi(z.object({ id: z.string(), email: z.string(), createdAt: Timestamp, request_id: RequestId }), { title: 'User' });

const publicErrors = errors(400, 429, 500, 503);

export const authContract = c.router({
  register: {
    method: 'POST',
    path: '/v1/auth/register',
    body: Credentials.strict(),
    responses: { 201: Session, 409: errorResponse(409), ...publicErrors, ...bodyErrors },
    summary: 'Register a user',
    description: 'Creates a user and a session. The refresh token is set as the `refresh_token` cookie.',
    metadata: auth('none', { rateLimited: true }),
  },
  login: {
    method: 'POST',
    path: '/v1/auth/login',
    body: Credentials.extend({ password: z.string().min(1).max(256) }).strict(),
    responses: { 200: Session, 401: errorResponse(401), ...publicErrors, ...bodyErrors },
    summary: 'Log in',
    description: 'Starts a session. A wrong email and a wrong password give the same `invalid_credentials`.',
    metadata: auth('none', { rateLimited: true }),
  },
  refresh: {
    method: 'POST',
    path: '/v1/auth/refresh',
    body: c.noBody(),
    responses: { 200: Session, 401: errorResponse(401), ...publicErrors, ...bodyErrors },
    summary: 'Refresh the access token',
    description:
      'Reads the `refresh_token` cookie, rotates it and returns a new access token. Presenting an already rotated refresh token revokes the whole session.',
    metadata: auth('refresh_cookie', { rateLimited: true }),
  },
  logout: {
    method: 'POST',
    path: '/v1/auth/logout',
    body: c.noBody(),
    responses: { 204: c.noBody(), ...publicErrors, ...bodyErrors },
    summary: 'Log out',
    description: 'Revokes the session of the `refresh_token` cookie and clears the cookie.',
    metadata: auth('refresh_cookie'),
  },
  me: {
    method: 'GET',
    path: '/v1/auth/me',
    responses: { 200: Me, ...authErrors },
    summary: 'The current user',
    description: 'Returns the user the credential acts as.',
    metadata: auth('bearer'),
  },
});
