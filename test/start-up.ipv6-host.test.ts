/**
 * HOST is "interface to listen on" (README, Configuration), and the chosen port is logged with the
 * service's URL (`HTTP API listening`, and the `ready: API …` line for the person at the terminal).
 * With an IPv6 HOST (`::1`, or `::` for every interface) that URL was `http://::1:PORT`, which no
 * client can open.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { ChildService } from './support/child-service.ts';
import { createTestDatabase } from './support/database.ts';

const services: ChildService[] = [];
afterAll(async () => {
  for (const service of services) await service.stop();
});

describe('an IPv6 HOST', () => {
  for (const host of ['::1', '::']) {
    it(`HOST=${host}: the logged URL and the ready line open the service`, async () => {
      const service = new ChildService({ HOST: host, DATABASE_URL: await createTestDatabase(), JWT_SECRET: 'j'.repeat(40), ENCRYPTION_KEY: Buffer.alloc(32, 1).toString('base64') });
      services.push(service);
      const { url } = await service.start();
      const health = await fetch(`${url}/healthz`).then((response) => response.status, (error: Error) => error.message);
      expect(health, url).toBe(200);
      const ready = service.lines.find((line) => line.startsWith('ready: API '))!;
      expect(ready).toContain(`${url}/v1`);
    }, 60_000);
  }
});
