import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Router, type Response } from 'express';

/**
 * GET /console: the operator console, a page of the API process that uses only the public API
 * (sign-in, stores, stats, jobs, retries, webhook endpoints, the audit log) from the browser. No build step: the app is a plain ES
 * module (public/app.js) rendered with preact through htm's tagged templates, both from the `htm`
 * package's standalone bundle, styled by Pico CSS; every file is served from here, so the page
 * works offline and a strict Content-Security-Policy allows nothing from elsewhere.
 */
const require = createRequire(import.meta.url);
const PUBLIC_DIR = path.join(path.dirname(fileURLToPath(import.meta.url)), 'public');

/** The console's own modules and style sheet: app.js is the shell, the others its views and shared parts. */
const OWN_FILES = ['app.js', 'lib.js', 'attention.js', 'jobs.js', 'job.js', 'webhooks.js', 'audit.js', 'actions.js', 'divergences.js', 'console.css'];

/** URL path under /console/ → file on disk. Only these are served. */
const FILES: Record<string, string> = {
  ...Object.fromEntries(OWN_FILES.map((file) => [file, path.join(PUBLIC_DIR, file)])),
  // The browser build of the standalone bundle (preact, its hooks and htm in one ES module).
  // (htm's exports map names a CommonJS file it does not ship, so resolve the package's main entry.)
  'assets/preact-htm.js': path.join(path.dirname(require.resolve('htm')), '..', 'preact', 'standalone.module.js'),
  'assets/pico.min.css': path.join(path.dirname(require.resolve('@picocss/pico/package.json')), 'css', 'pico.min.css'),
};

const CONTENT_SECURITY_POLICY = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  // Pico draws its select arrows and checkmarks as inline SVG data URLs.
  "img-src 'self' data:",
  "connect-src 'self'",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
].join('; ');

const PAGE = `<!doctype html>
<html lang="en">
  <head>
    <meta charset="utf-8">
    <meta name="viewport" content="width=device-width, initial-scale=1">
    <meta name="color-scheme" content="light dark">
    <title>Operator console: Reseller Order-Routing Service</title>
    <link rel="stylesheet" href="/console/assets/pico.min.css">
    <link rel="stylesheet" href="/console/console.css">
    <script type="module" src="/console/app.js"></script>
  </head>
  <body>
    <div id="console">
      <main class="container"><h1>Operator console</h1><p>Loading…</p>
        <noscript><p>The operator console needs JavaScript. The API itself is described at <a href="/docs">/docs</a>.</p></noscript>
      </main>
    </div>
  </body>
</html>
`;

function secured(res: Response): Response {
  return res
    .set('Content-Security-Policy', CONTENT_SECURITY_POLICY)
    .set('X-Content-Type-Options', 'nosniff')
    .set('Referrer-Policy', 'no-referrer')
    .set('Cache-Control', 'no-cache');
}

export function consoleRoutes(): Router {
  const router = Router();
  router.get('/console', (_req, res) => {
    secured(res).type('html').send(PAGE);
  });
  for (const [urlPath, file] of Object.entries(FILES)) {
    router.get(`/console/${urlPath}`, (_req, res, next) => {
      // no-cache: the browser revalidates, so a new release is picked up on the next load.
      secured(res).sendFile(file, { lastModified: true, cacheControl: false }, (error) => error && next(error));
    });
  }
  return router;
}
