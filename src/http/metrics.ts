import { isAppRoute, type AppRoute, type AppRouter } from '@ts-rest/core';
import type { NextFunction, Request, Response } from 'express';
import { contract } from '../../contract/index.ts';
import type { Metrics } from '../metrics/index.ts';

interface RoutePattern {
  method: string;
  path: string;
  pattern: RegExp;
}

function flatten(router: AppRouter): AppRoute[] {
  return Object.values(router).flatMap((entry) => (isAppRoute(entry) ? [entry] : flatten(entry)));
}

/** Every contract route as a matcher (case-insensitive, like Express's routing). */
const CONTRACT_ROUTES: RoutePattern[] = flatten(contract).map((route) => ({
  method: route.method,
  path: route.path,
  pattern: new RegExp(`^${route.path.replace(/[.*+?^${}()|[\]\\]/g, '\\$&').replace(/:[A-Za-z_]+/g, '[^/]+')}/?$`, 'i'),
}));

/**
 * The route pattern of a request. A request answered before its route ran (a webhook refused by the
 * intake, a body that is not JSON) still belongs to the contract route its method and path name;
 * only paths outside the contract and the app's own routes are `unmatched`.
 */
function routeOf(req: Request): string {
  const tsRestRoute = (req as Request & { tsRestRoute?: { path: string } }).tsRestRoute?.path;
  if (tsRestRoute) return tsRestRoute;
  const expressRoute = (req.route as { path?: unknown } | undefined)?.path;
  if (typeof expressRoute === 'string') return expressRoute;
  const path = (req.originalUrl || req.url).split('?')[0]!;
  return CONTRACT_ROUTES.find((route) => route.method === req.method && route.pattern.test(path))?.path ?? 'unmatched';
}

/** Times every request, labelled by the route pattern (never the raw path: ids would explode cardinality). */
export function recordHttpMetrics(metrics: Metrics) {
  return (req: Request, res: Response, next: NextFunction) => {
    const stop = metrics.httpDuration.startTimer({ method: req.method });
    res.on('finish', () => {
      stop({ route: routeOf(req), status: String(res.statusCode) });
    });
    next();
  };
}
