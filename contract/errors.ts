/**
 * The closed set of error codes (decisions.md, "Errors"), each with its one HTTP status.
 * Declared here because they are part of the API; src/shared/errors.ts builds on them.
 */
export const ERROR_STATUS = {
  validation_failed: 400,
  sync_job_not_retryable: 400,
  unauthorized: 401,
  invalid_credentials: 401,
  invalid_signature: 401,
  not_found: 404,
  conflict: 409,
  payload_too_large: 413,
  unsupported_media_type: 415,
  rate_limited: 429,
  internal_error: 500,
  unavailable: 503,
} as const;

export type ErrorCode = keyof typeof ERROR_STATUS;
export const ERROR_CODES = Object.keys(ERROR_STATUS) as [ErrorCode, ...ErrorCode[]];
