import { recordSecret } from './leaks.ts';

export interface ApiResponse<T = any> {
  status: number;
  body: T;
  headers: Headers;
}

export interface RequestOptions {
  token?: string | undefined;
  body?: unknown;
  /** Sent as-is instead of JSON-encoding `body`. */
  rawBody?: string | Buffer;
  headers?: Record<string, string>;
}

/** Fields of request bodies that carry a secret, and of response bodies that reveal one. */
const SECRET_REQUEST_FIELDS = ['password', 'accessToken', 'webhookSecret'] as const;

/** Remembers the secrets a request sends or an answer reveals, for the check that none is logged. */
function recordSecretsOf(requestBody: unknown, responseBody: unknown): void {
  if (requestBody && typeof requestBody === 'object') {
    for (const field of SECRET_REQUEST_FIELDS) recordSecret(field, (requestBody as Record<string, unknown>)[field]);
  }
  if (responseBody && typeof responseBody === 'object') {
    recordSecret('raw API key', (responseBody as Record<string, unknown>).raw_key);
    recordSecret('access token (JWT)', (responseBody as Record<string, unknown>).accessToken);
    recordSecret('webhook endpoint signing secret', (responseBody as Record<string, unknown>).secret);
  }
}

/** Real HTTP against the service on loopback; bodies parsed as JSON when there is one. */
export class ApiClient {
  constructor(readonly baseUrl: string) {}

  async request<T = any>(method: string, path: string, options: RequestOptions = {}): Promise<ApiResponse<T>> {
    const headers: Record<string, string> = { ...options.headers };
    if (options.token) headers.authorization = `Bearer ${options.token}`;
    let body: string | Buffer | undefined;
    if (options.rawBody !== undefined) body = options.rawBody;
    else if (options.body !== undefined) {
      body = JSON.stringify(options.body);
      headers['content-type'] ??= 'application/json';
    }
    const response = await fetch(`${this.baseUrl}${path}`, { method, headers, body });
    const text = await response.text();
    const parsed = text ? JSON.parse(text) : undefined;
    recordSecretsOf(options.body, parsed);
    return { status: response.status, body: parsed, headers: response.headers };
  }

  get = <T = any>(path: string, options?: RequestOptions) => this.request<T>('GET', path, options);
  post = <T = any>(path: string, options?: RequestOptions) => this.request<T>('POST', path, options);
  patch = <T = any>(path: string, options?: RequestOptions) => this.request<T>('PATCH', path, options);
  delete = <T = any>(path: string, options?: RequestOptions) => this.request<T>('DELETE', path, options);
}
