import { RequestContext } from '@mikro-orm/core';
import type { RequestHandler } from 'express';
import type { Orm } from './orm.ts';

/**
 * One ORM identity map per request: the repositories read it through `orm.em`. Requests to
 * `unscoped` paths (the platforms' webhooks, whose intake forks its own entity managers) get
 * none, which saves creating one on the ingest's hot path.
 */
export const requestScope =
  (orm: Orm, unscoped: ReadonlySet<string> = new Set()): RequestHandler =>
  (req, _res, next) =>
    unscoped.has(req.path) ? next() : RequestContext.create(orm.em, next);
