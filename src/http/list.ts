import type { Page } from '../shared/paging.ts';

/** The list envelope every list endpoint answers with (decisions.md). */
export function listBody<T, U>(
  req: { requestId: string; baseUrl: string; path: string },
  page: Page<T>, present: (item: T) => U) {
  return {
    object: 'list' as const,
    data: page.data.map(present),
    has_more: page.has_more,
    url: req.baseUrl + req.path,
    request_id: req.requestId,
  };
}
