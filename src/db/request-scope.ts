import { RequestContext } from '@mikro-orm/core';
import type { RequestHandler } from 'express';
import type { Orm } from './orm.ts';

/** One ORM identity map per request: the repositories read it through `orm.em`. */
export const requestScope =
  (orm: Orm): RequestHandler =>
  (_req, _res, next) =>
    RequestContext.create(orm.em, next);
