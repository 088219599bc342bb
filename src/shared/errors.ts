/** Services throw `AppError` with one of the contract's codes; src/http/errors.ts renders it. */
import { ERROR_STATUS, type ErrorCode } from '../../contract/errors.ts';

export { ERROR_STATUS, type ErrorCode };

const DEFAULT_MESSAGES: Record<ErrorCode, string> = {
  validation_failed: 'The request is not valid.',
  sync_job_not_retryable: 'Only failed or dead sync jobs can be retried.',
  unauthorized: 'Authentication is required: send a valid access token or API key.',
  invalid_credentials: 'The email or password is not correct.',
  invalid_signature: 'The webhook signature could not be verified.',
  not_found: 'No such resource.',
  conflict: 'The request conflicts with the current state of a resource.',
  payload_too_large: 'The request body is larger than 1 MiB.',
  unsupported_media_type: 'Request bodies must be JSON (Content-Type: application/json).',
  rate_limited: 'Too many requests; retry after the time in the Retry-After header.',
  internal_error: 'Something went wrong on our side.',
  unavailable: 'The service is temporarily unavailable; retry shortly.',
};

export interface AppErrorOptions {
  message?: string;
  param?: string;
  details?: Record<string, unknown>;
  retryAfterSeconds?: number;
}

export class AppError extends Error {
  readonly status: number;
  readonly param: string | undefined;
  readonly details: Record<string, unknown> | undefined;
  readonly retryAfterSeconds: number | undefined;

  constructor(
    readonly code: ErrorCode,
    options: AppErrorOptions = {},
  ) {
    super(options.message ?? DEFAULT_MESSAGES[code]);
    this.name = 'AppError';
    this.status = ERROR_STATUS[code];
    this.param = options.param;
    this.details = options.details;
    this.retryAfterSeconds = options.retryAfterSeconds;
  }
}

export const notFound = () => new AppError('not_found');
export const validationFailed = (param: string, message: string) => new AppError('validation_failed', { param, message });
/** 409 `conflict`: `details.reason` says which, and `details` may carry more facts (e.g. the resources in the way). */
export const conflict = (reason: string, message: string, param?: string, details: Record<string, unknown> = {}) =>
  new AppError('conflict', { message, param, details: { reason, ...details } });
