/** Every route of the ts-rest contract, read from the contract itself so new routes are covered without a list to update. */
import { isAppRoute, type AppRoute } from '@ts-rest/core';
import { contract } from '../../../contract/index.ts';
import type { RouteAuth } from '../../../contract/common.ts';

export interface ContractRoute {
  /** e.g. `syncJobs.retry`. */
  name: string;
  method: string;
  /** Express-style, e.g. `/v1/reseller_stores/:rst_id/source_stores/:id`. */
  path: string;
  auth: RouteAuth;
  params: string[];
  hasBody: boolean;
  route: AppRoute;
}

export function contractRoutes(): ContractRoute[] {
  const routes: ContractRoute[] = [];
  const walk = (node: Record<string, unknown>, prefix: string[]) => {
    for (const [key, value] of Object.entries(node)) {
      if (isAppRoute(value as AppRoute)) {
        const route = value as AppRoute;
        routes.push({
          name: [...prefix, key].join('.'),
          method: route.method,
          path: route.path,
          auth: (route.metadata as { auth?: RouteAuth } | undefined)?.auth ?? 'bearer',
          params: [...route.path.matchAll(/:([A-Za-z_]+)/g)].map((match) => match[1]!),
          hasBody: route.method !== 'GET' && 'body' in route && route.body !== undefined,
          route,
        });
      } else if (value && typeof value === 'object') {
        walk(value as Record<string, unknown>, [...prefix, key]);
      }
    }
  };
  walk(contract as unknown as Record<string, unknown>, []);
  return routes;
}

/** The path with every parameter replaced (already encoded by the caller as it wishes). */
export function fillPath(path: string, values: Record<string, string>): string {
  return path.replace(/:([A-Za-z_]+)/g, (_, name: string) => {
    const value = values[name];
    if (value === undefined) throw new Error(`no value for :${name} in ${path}`);
    return value;
  });
}
