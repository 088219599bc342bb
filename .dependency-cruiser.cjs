/**
 * The project's dependency rules, checked by `npm test` (test/dependencies.test.ts runs
 * dependency-cruiser with this file). README "Architecture" describes the layers:
 *
 * - the core: the retry framework (src/attempts), the queue, pacing, the database, the HTTP
 *   pipeline, configuration, metrics, shared code, the shared counters behind rate limits, and the
 *   two trails every change writes in its own transaction: the audit log's writer
 *   (src/audit-log/repository.ts, entity.ts) and the events outbox (src/events/outbox.ts,
 *   types.ts, repository.ts, entity.ts). The core imports no feature.
 * - features: every other folder of src/ (src/<feature>/: routes, service, repository, present,
 *   events, kind), except the platform adapters (src/platforms) and the composition: src/workers/
 *   (the one list of kinds, the workers) and the files directly in src/ (main, server, app,
 *   services; no context bag: each service, runner, scheduler and kind is handed exactly what it uses). A feature imports the core, its own files and other features' services,
 *   presenters, events, kinds or types; never another feature's routes or repository.
 * - machines/ are pure: they import nothing from src/.
 * - Only repositories, entities and src/db/ use MikroORM or Kysely (the composition root too
 *   reaches the database only through them).
 */
const CORE = '^src/(attempts|queue|pacing|db|http|shared|config|metrics|rate-limits)/|^src/audit-log/(repository|entity)\\.ts$|^src/events/(outbox|types|repository|entity)\\.ts$';
const COMPOSITION = '^src/[^/]+\\.ts$|^src/workers/';
const ADAPTERS = '^src/platforms/';
/** The files that build the process: the only ones that see every service and what the process is built on. */
const COMPOSITION_ROOT = '^src/(services|server|app|main)\\.ts$|^src/workers/';
const DATA_ACCESS = '(^|/)(repository|[a-z-]*\\.?entity)\\.ts$|^src/db/';

/** @type {import('dependency-cruiser').IConfiguration} */
module.exports = {
  forbidden: [
    {
      name: 'no-cycles',
      severity: 'error',
      comment: 'No import cycles, type-only imports included (tsPreCompilationDeps).',
      from: {},
      to: { circular: true },
    },
    {
      name: 'core-imports-no-feature',
      severity: 'error',
      comment: 'The core (see the top of this file) imports nothing from a feature, nor from the composition that knows them.',
      from: { path: CORE },
      to: { path: '^src/', pathNot: [CORE, ADAPTERS] },
    },
    {
      name: 'no-other-features-routes-or-repository',
      severity: 'error',
      comment: 'A feature reaches another feature through its service (or its presenters, events, kind, types), never its routes or repository.',
      from: { path: '^src/([^/]+)/', pathNot: [CORE, COMPOSITION, ADAPTERS] },
      to: { path: '^src/[^/]+/(routes|repository)\\.ts$', pathNot: ['^src/$1/', CORE] },
    },
    {
      name: 'no-feature-imports-the-composition',
      severity: 'error',
      comment:
        'Services, runners, schedulers, kinds and attempts are handed exactly what they use by the composition root (src/services.ts, src/server.ts, src/app.ts, src/workers/); nothing outside it imports it, nor a context bag (src/context.ts is gone).',
      from: { path: '^(src|contract|machines)/', pathNot: [COMPOSITION_ROOT] },
      to: { path: [COMPOSITION_ROOT, '^src/context\\.ts$'] },
    },
    {
      name: 'orm-only-in-repositories',
      severity: 'error',
      comment: 'Services hold the rules, repositories the data access: MikroORM and Kysely are used by repositories, entities and src/db/ only.',
      from: { path: '^src/', pathNot: [DATA_ACCESS] },
      to: { path: '(^|/)node_modules/(@mikro-orm|kysely)/' },
    },
    {
      name: 'machines-are-pure',
      severity: 'error',
      comment: 'Machines know states, events and guards: nothing from src/.',
      from: { path: '^machines/' },
      to: { path: '^src/' },
    },
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
    enhancedResolveOptions: { extensions: ['.ts', '.js'] },
    moduleSystems: ['es6', 'cjs'],
  },
};
