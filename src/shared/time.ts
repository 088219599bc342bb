export const iso = (date: Date): string => date.toISOString();
export const isoOrNull = (date: Date | null | undefined): string | null => (date ? date.toISOString() : null);

/**
 * What `work` resolves to within `ms` (as `{ value }`), or null when it rejects or takes longer: it is
 * not stopped then, its result is dropped. For a read that must not hold up an answer: a readiness
 * check, a metric read at scrape time, a DNS lookup at creation.
 */
export async function settledWithin<T>(work: () => Promise<T>, ms: number): Promise<{ value: T } | null> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<null>((resolve) => (timer = setTimeout(resolve, ms, null)));
  try {
    return await Promise.race([work().then((value) => ({ value })), timeout]);
  } catch {
    return null;
  } finally {
    clearTimeout(timer);
  }
}
