/** `npm run openapi`: writes openapi.json from the contract (a test fails when they drift). */
import { writeFileSync } from 'node:fs';
import { buildOpenApiDocument } from '../contract/openapi.ts';

export const OPENAPI_PATH = new URL('../openapi.json', import.meta.url);
writeFileSync(OPENAPI_PATH, `${JSON.stringify(buildOpenApiDocument(), null, 2)}\n`);
console.log('wrote openapi.json');
