// The API process: migrate, listen, and stop gracefully on SIGTERM / SIGINT.
import type { AddressInfo } from 'node:net';
import { collectDefaultMetrics } from 'prom-client';
import { buildApp, closeServices, createServices } from './app.js';
import { loadConfig, portInUseMessage, publicUrl } from './config.js';
import { Db, migrate } from './core/db.js';
import { assertSettings } from './core/settings.js';
import { sealStoredSecrets } from './core/secretBox.js';
import { RequestsInFlight } from './http/inFlight.js';

// Every variable of src/core/settings.ts checked first: one message naming each bad one.
assertSettings();
const config = loadConfig();
const services = await createServices(config);
const applied = await migrate(services.orm);
if (applied.length) services.logger.info({ applied }, 'migrations applied');
// Credentials stored before sealing existed (or put in by hand) are sealed now (src/core/secretBox.ts).
const sealed = await sealStoredSecrets(new Db(services.orm.em.fork()));
if (Object.values(sealed).some(Boolean)) services.logger.info({ sealed }, 'stored credentials sealed');
// Process metrics (CPU, memory, event loop) of the API on /metrics next to the request metrics.
collectDefaultMetrics({ register: services.metrics.registry });

const inFlight = new RequestsInFlight();
const server = buildApp(services, { inFlight }).listen(config.port, config.host, () => {
  const { port } = server.address() as AddressInfo;
  const url = publicUrl(config.host, port);
  services.logger.info({ port, version: config.serverVersion, docs: `${url}/api/docs` }, `api listening on ${url} (web application), API docs at ${url}/api/docs`);
});
server.on('error', async (err: NodeJS.ErrnoException) => {
  if (err.code !== 'EADDRINUSE') throw err;
  services.logger.error(portInUseMessage(config.host, config.port));
  await closeServices(services).catch(() => undefined);
  process.exit(1);
});

let stopping = false;
async function shutdown(signal: string) {
  if (stopping) return;
  stopping = true;
  const timeoutMs = services.queueSettings.shutdownTimeoutMs;
  services.logger.info({ signal, timeout_ms: timeoutMs }, 'api shutting down');
  // In-flight requests get SHUTDOWN_TIMEOUT_MS (10 s) to finish; then the process exits anyway.
  const deadline = setTimeout(() => {
    services.logger.warn('shutdown deadline passed with requests still open');
    process.exit(1);
  }, timeoutMs);
  deadline.unref();
  // Stop accepting connections, close idle keep-alive ones, let in-flight requests finish (their
  // handlers too, when their client already left), then close the queues, Redis and the database pool.
  const closed = new Promise<void>((resolve) => server.close(() => resolve()));
  server.closeIdleConnections?.();
  // Event streams never finish on their own: end them now (each told why, with its last id).
  const streams = services.events.endAll('the server is shutting down: reconnect with Last-Event-ID');
  await closed;
  await inFlight.idle();
  await closeServices(services);
  clearTimeout(deadline);
  services.logger.info({ signal, event_streams_ended: streams }, 'api stopped');
  process.exit(0);
}
process.on('SIGTERM', () => void shutdown('SIGTERM'));
process.on('SIGINT', () => void shutdown('SIGINT'));
