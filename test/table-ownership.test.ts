/**
 * A feature's repository runs statements on its own tables (and the core's); what it needs of
 * another feature's tables it reaches through a port the composition root fills with that feature's
 * repository (README "Architecture"). Imports cannot show this (SQL names tables in strings), so this
 * reads every feature repository for the tables of other features (named in SQL, or their entity
 * handed to the ORM), and compares what it finds with
 * the statements that still do, each named with why. A new one fails here; so does a listed one
 * that moved to its owner (take it off the list).
 */
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const SRC = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../src');

/** Tables every feature writes beside its own changes, or the core keeps: the timeline, the audit log, the events. */
const CORE_TABLES = new Set(['attempts', 'audit_entries', 'events']);

/** Tables whose entity has a folder of its own but whose statements are another feature's: src/users/ holds only the entity, accounts are auth's. */
const HOMES: Record<string, string> = { users: 'auth' };

/** Statements that still read or write another feature's tables, by repository, with why they have not moved. */
const REMAINING: Record<string, Record<string, string>> = {
  cancellations: {
    sync_jobs:
      'jobDetailIn: a sync job event in the kind outcome events, which are handed only the transaction (src/attempts/kind.ts); held supplier cancellations claimed and forgotten by the jobs of their order, one statement each (as held fulfillments)',
    fulfillments: 'jobDetailIn: the same event shows the job with its fulfillments',
  },
  'divergence-watch': {
    sync_jobs: 'raiseStale: one insert … select deciding which placed jobs are stale, then the jobs raised for their events; listOpen and find: each entry with its job\'s storefront order number',
    fulfillments: 'raiseStale: a job with no fulfillment is stale',
    cancellations: 'raiseStale: a job whose supplier order was cancelled is never stale; cancellationOutcomeSteps: a step of the cancellation kind\'s transition statement',
  },
  events: {
    webhook_endpoints: 'the outbox fans an event out to the subscribed endpoints in its insert',
    webhook_deliveries: 'the outbox inserts the deliveries with their event; pruning deletes them with it',
  },
  fulfillments: {
    sync_jobs: 'held fulfillments claimed and forgotten by the jobs of their order, one statement each',
  },
  reconciliation: {
    reseller_stores: 'the lag gauge: every active store with its watermark, in one statement',
  },
  'reseller-stores': {
    sync_jobs: 'readStoreStats: the oldest pending job and the newest job, in the one statement of the store\'s stats',
    reconciliation_runs: 'stats: the store\'s last reconciliation, in the same statement',
  },
  'source-stores': {
    reseller_stores: 'insertUnderLimit: the parent store, read FOR SHARE in the creation\'s transaction, so a supplier is never created under a store being deleted',
  },
  'sync-jobs': {
    cancellations: 'orderInDoubt: a job ended unplaced while in doubt could own an order until its cancellation has looked it up (also in the held rows\' noJobCanOwn)',
    source_stores: 'loadWithSources: a worker batch reads its jobs with their stores in one statement (the hot path)',
    reseller_stores: 'loadWithSources: the same statement, for jobs whose order is read from the storefront',
  },
};

/** Which feature owns each table (the folder of the entity that maps it), and each entity's table. */
function tableOwners(): { owners: Map<string, string>; tableOf: Map<string, string> } {
  const owners = new Map<string, string>();
  const tableOf = new Map<string, string>();
  for (const feature of readdirSync(SRC, { withFileTypes: true }).filter((entry) => entry.isDirectory())) {
    for (const file of readdirSync(path.join(SRC, feature.name)).filter((name) => name.endsWith('entity.ts'))) {
      const text = readFileSync(path.join(SRC, feature.name, file), 'utf8');
      for (const [, entity, table] of text.matchAll(/export const (\w+) = defineEntity\(\{[^]*?tableName:\s*'(\w+)'/g)) {
        owners.set(table!, HOMES[table!] ?? feature.name);
        tableOf.set(entity!, table!);
      }
    }
  }
  return { owners, tableOf };
}

const withoutComments = (text: string) => text.replace(/\/\*[\s\S]*?\*\//g, '').replace(/\/\/[^\n]*/g, '');

describe('table ownership', () => {
  it("no feature repository names another feature's table, but for the statements listed", () => {
    const { owners, tableOf } = tableOwners();
    expect(owners.get('sync_jobs')).toBe('sync-jobs');
    expect(owners.get('held_fulfillments')).toBe('fulfillments');
    expect(tableOf.get('SourceStore')).toBe('source_stores');
    const found: Record<string, Record<string, string>> = {};
    for (const feature of readdirSync(SRC, { withFileTypes: true }).filter((entry) => entry.isDirectory())) {
      let text: string;
      try {
        text = withoutComments(readFileSync(path.join(SRC, feature.name, 'repository.ts'), 'utf8'));
      } catch {
        continue;
      }
      for (const [table, owner] of owners) {
        if (owner === feature.name || CORE_TABLES.has(table)) continue;
        // A table named in a Kysely call ('sync_jobs', 'sync_jobs as j') or in raw SQL (from, join, into,
        // update), or its entity handed to the ORM (em.find(SyncJob, …), em.map(SyncJob, row), …).
        const named = new RegExp(`(?:'|\\bfrom\\s+|\\bjoin\\s+|\\binto\\s+|\\bupdate\\s+)${table}\\b`);
        const entities = [...tableOf].filter(([, mapped]) => mapped === table).map(([entity]) => entity);
        const throughOrm = entities.some((entity) => new RegExp(`\\.(?:find\\w*|count|native\\w+|create|map|upsert\\w*|getReference)\\(\\s*${entity}\\b`).test(text));
        if (named.test(text) || throughOrm) (found[feature.name] ??= {})[table] = REMAINING[feature.name]?.[table] ?? 'not listed';
      }
    }
    expect(found).toEqual(REMAINING);
  });
});
