import { createRequire } from 'node:module';
import path from 'node:path';
import { Router, type Response } from 'express';

/**
 * GET /docs: a readable API reference rendered in the browser from GET /openapi.json by Swagger UI.
 * Its assets come from the `swagger-ui-dist` package and are served from here, so the page works
 * offline: nothing is loaded from a CDN, and no validator badge calls out (validatorUrl: null).
 */
const ASSETS_DIR = path.dirname(createRequire(import.meta.url).resolve('swagger-ui-dist/package.json'));
const ASSETS = ['swagger-ui.css', 'swagger-ui-bundle.js', 'favicon-32x32.png', 'favicon-16x16.png'];

const PAGE = `<!doctype html>
<html lang="en">
  <head>
    <meta charset="utf-8">
    <meta name="viewport" content="width=device-width, initial-scale=1">
    <title>Reseller Order-Routing Service: API reference</title>
    <link rel="stylesheet" href="/docs/assets/swagger-ui.css">
    <link rel="icon" type="image/png" href="/docs/assets/favicon-32x32.png" sizes="32x32">
    <link rel="icon" type="image/png" href="/docs/assets/favicon-16x16.png" sizes="16x16">
    <style>body { margin: 0; }</style>
  </head>
  <body>
    <div id="docs"><noscript>The API reference needs JavaScript; the raw document is at <a href="/openapi.json">/openapi.json</a>.</noscript></div>
    <script src="/docs/assets/swagger-ui-bundle.js"></script>
    <script src="/docs/init.js"></script>
  </body>
</html>
`;

// A file of its own rather than an inline script, so a strict Content-Security-Policy can allow it.
// Try-it-out calls go to the service that serves the page, listed first among the spec's servers.
const INIT = `fetch('/openapi.json')
  .then((response) => response.json())
  .then((spec) => {
    const here = { url: window.location.origin, description: 'This service' };
    spec.servers = [here].concat((spec.servers || []).filter((server) => server.url !== here.url));
    window.ui = SwaggerUIBundle({
      spec,
      dom_id: '#docs',
      deepLinking: true,
      validatorUrl: null,
      docExpansion: 'list',
      defaultModelsExpandDepth: 0,
      displayRequestDuration: true,
      presets: [SwaggerUIBundle.presets.apis],
      layout: 'BaseLayout',
    });
  })
  .catch((error) => {
    document.getElementById('docs').textContent = 'Could not load /openapi.json: ' + error;
  });
`;

/**
 * Nothing from elsewhere, no inline script, no framing (clickjacking of Try it out with a pasted key).
 * Styles may be inline: Swagger UI sets style attributes as it renders, and a style cannot run code.
 */
const CONTENT_SECURITY_POLICY = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self' 'unsafe-inline'",
  // Swagger UI draws its icons as inline SVG data URLs.
  "img-src 'self' data:",
  "connect-src 'self'",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
].join('; ');

function secured(res: Response): Response {
  return res
    .set('Content-Security-Policy', CONTENT_SECURITY_POLICY)
    .set('X-Frame-Options', 'DENY')
    .set('X-Content-Type-Options', 'nosniff')
    .set('Referrer-Policy', 'no-referrer');
}

export function docsRoutes(): Router {
  const router = Router();
  router.get('/docs', (_req, res) => {
    secured(res).type('html').set('Cache-Control', 'no-cache').send(PAGE);
  });
  router.get('/docs/init.js', (_req, res) => {
    secured(res).type('js').set('Cache-Control', 'no-cache').send(INIT);
  });
  for (const file of ASSETS) {
    router.get(`/docs/assets/${file}`, (_req, res, next) => {
      secured(res).sendFile(path.join(ASSETS_DIR, file), { maxAge: '1d' }, (error) => error && next(error));
    });
  }
  return router;
}
