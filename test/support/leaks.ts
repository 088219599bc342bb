/**
 * What a test file's secrets and logs were, for the check that no secret is ever logged
 * (test/setup/no-secrets-in-logs.ts runs it after every file, once its fixtures are torn down). Factories and the ApiClient record
 * the secrets they send; every service a test starts registers its log lines.
 */

/** Secret value → what it is. */
const secrets = new Map<string, string>();
const logSources: { label: string; lines: string[] }[] = [];

/**
 * Remembers a secret the suite sent to the service. Values too short or too uniform to be told
 * apart from ordinary log text (e.g. a password of eight spaces in a validation test) are skipped.
 */
export function recordSecret(label: string, value: unknown): void {
  if (typeof value !== 'string' || value.length < 8 || new Set(value).size < 5) return;
  if (!secrets.has(value)) secrets.set(value, label);
}

/** Registers the (growing) array of one process's log lines. */
export function registerLogs(label: string, lines: string[]): void {
  logSources.push({ label, lines });
}

export interface Leak {
  secret: string;
  source: string;
  line: string;
}

export function recordedSecretCount(): number {
  return secrets.size;
}

export function registeredLogLineCount(): number {
  return logSources.reduce((sum, source) => sum + source.lines.length, 0);
}

/** Every log line that contains a recorded secret, the secret masked in what is reported. */
export function findLeaks(): Leak[] {
  const leaks: Leak[] = [];
  for (const { label, lines } of logSources) {
    for (const line of lines) {
      for (const [value, what] of secrets) {
        if (!line.includes(value)) continue;
        leaks.push({ secret: what, source: label, line: line.replaceAll(value, `<${what}>`).slice(0, 500) });
      }
    }
  }
  return leaks;
}
