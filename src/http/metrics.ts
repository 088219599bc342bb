import type { NextFunction, Request, Response } from 'express';
import type { Metrics } from '../metrics/index.ts';

/** Times every request, labelled by the route pattern (never the raw path: ids would explode cardinality). */
export function recordHttpMetrics(metrics: Metrics) {
  return (req: Request, res: Response, next: NextFunction) => {
    const stop = metrics.httpDuration.startTimer({ method: req.method });
    res.on('finish', () => {
      const route = (req as Request & { tsRestRoute?: { path: string } }).tsRestRoute?.path ?? (req.baseUrl || (req.route as { path?: string } | undefined)?.path || 'unmatched');
      stop({ route, status: String(res.statusCode) });
    });
    next();
  };
}
