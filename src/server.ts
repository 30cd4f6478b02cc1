// The API process: migrate, listen, and stop gracefully on SIGTERM / SIGINT.
import type { AddressInfo } from 'node:net';
import { buildApp, closeServices, createServices } from './app.js';
import { loadConfig } from './config.js';
import { migrate } from './core/db.js';

const config = loadConfig();
const services = await createServices(config);
const applied = await migrate(services.orm);
if (applied.length) services.logger.info({ applied }, 'migrations applied');

const server = buildApp(services).listen(config.port, () => {
  const { port } = server.address() as AddressInfo;
  services.logger.info({ port, version: config.serverVersion }, 'api listening');
});

let stopping = false;
async function shutdown(signal: string) {
  if (stopping) return;
  stopping = true;
  services.logger.info({ signal }, 'api shutting down');
  const deadline = setTimeout(() => process.exit(1), 10_000);
  deadline.unref();
  // Stop accepting connections, let in-flight requests finish, then close pools.
  await new Promise<void>((resolve) => server.close(() => resolve()));
  server.closeIdleConnections?.();
  await closeServices(services);
  process.exit(0);
}
process.on('SIGTERM', () => void shutdown('SIGTERM'));
process.on('SIGINT', () => void shutdown('SIGINT'));
