import type { NextFunction, Request, Response } from 'express';
import type { RequestValidationError } from '@ts-rest/express';
import type { ZodError, ZodIssue } from 'zod';
import { AppError } from '../shared/errors.ts';
import { sendError } from './errors.ts';

/** Contract validation failures become `validation_failed` naming the first offending field. */
export function onRequestValidationError(error: RequestValidationError, req: Request, res: Response, _next: NextFunction): void {
  const sources: [string, ZodError | null][] = [
    ['path', error.pathParams],
    ['header', error.headers],
    ['query', error.query],
    ['body', error.body],
  ];
  for (const [source, zodError] of sources) {
    const issue = zodError?.issues[0];
    if (!issue) continue;
    const path = pathOf(issue);
    const param = path.length > 0 ? path.join('.') : source;
    const message = path.length > 0 ? `${param}: ${issue.message}` : `The request ${source} is not valid: ${issue.message}`;
    const details = { issues: zodError.issues.slice(0, 20).map((i) => ({ param: pathOf(i).join('.') || source, message: i.message })) };
    return sendError(req, res, new AppError('validation_failed', { param, message, details }));
  }
  sendError(req, res, new AppError('validation_failed'));
}

/** An unknown field is reported on the field itself (`shopDomain`), not on the object holding it. */
function pathOf(issue: ZodIssue): (string | number)[] {
  return issue.code === 'unrecognized_keys' && issue.keys[0] !== undefined ? [...issue.path, issue.keys[0]] : issue.path;
}
