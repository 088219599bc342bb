/** Runs the sandbox platform on its own: `PORT=4010 npm run sandbox`. */
import { startSandbox } from './server.ts';

const port = Number(process.env.PORT ?? 4010);
if (!Number.isInteger(port) || port < 0 || port > 65_535) {
  throw new RangeError(`PORT must be a port number, got ${process.env.PORT}`);
}

const sandbox = await startSandbox({ port, host: process.env.HOST });
console.log(`sandbox platform listening on ${sandbox.url} (PLATFORM_BASE_URL=${sandbox.baseUrlTemplate})`);

for (const signal of ['SIGTERM', 'SIGINT'] as const) {
  process.once(signal, () => void sandbox.close());
}
