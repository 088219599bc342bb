import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import pg from 'pg';
import pino from 'pino';
import type { TestProject } from 'vitest/node';
import { deleteDataDir, startEmbeddedPostgres } from '../src/db/embedded.ts';
import { connectOrm } from '../src/database.ts';
import { Queue } from '../src/queue/queue.ts';
import { ATTEMPT_QUEUES } from '../src/workers/kinds.ts';

export const TEMPLATE_DATABASE = 'service_template';

declare module 'vitest' {
  export interface ProvidedContext {
    /** Connection string of the run's PostgreSQL `postgres` database (for creating test databases). */
    pgAdminUrl: string;
    /** Where that PostgreSQL keeps its files: the run's temporary DATA_DIR and the cluster it holds or links to. */
    embeddedPostgres: { dataDir: string; clusterDir: string };
  }
}

/**
 * One embedded PostgreSQL for the whole run. A template database gets the migrations and the
 * queue schema once; every test file then clones it (CREATE DATABASE ... TEMPLATE), which takes
 * milliseconds and keeps files independent. Its DATA_DIR comes from mkdtemp, mode 700 like a
 * private home: as root, its cluster lives in the shared place (src/db/embedded-location.ts).
 */
export default async function setup(project: TestProject) {
  const dataDir = mkdtempSync(path.join(tmpdir(), 'ors-test-'));
  const db = await startEmbeddedPostgres({ dataDir });
  const admin = new pg.Client({ connectionString: db.url() });
  await admin.connect();
  await admin.query(`create database ${TEMPLATE_DATABASE}`);
  await admin.end();

  const templateUrl = db.url(TEMPLATE_DATABASE);
  const orm = await connectOrm(templateUrl, 2);
  await orm.close();
  const queue = await Queue.start({ connectionString: templateUrl, logger: pino({ level: 'silent' }), supervise: false, queues: ATTEMPT_QUEUES });
  await queue.stop();

  project.provide('pgAdminUrl', db.url());
  project.provide('embeddedPostgres', { dataDir, clusterDir: db.clusterDir });
  return async () => {
    await db.stop();
    deleteDataDir(dataDir);
  };
}
