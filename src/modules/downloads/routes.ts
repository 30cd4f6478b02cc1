// The agent's builds, handed out by the server that the agent will talk to: GET /api/v1/downloads
// lists them (with what the install commands need: this server's address for agents, sizes and
// SHA-256 sums), GET /downloads/{file} serves one, `{file}.sha256` its sum in `sha256sum -c` form.
// Public: a machine being set up has no credentials yet, and the files hold none.
import fs from 'node:fs';
import path from 'node:path';
import Joi from 'joi';
import type { Context } from 'koa';
import { AppError } from '../../core/errors.js';
import { FileResponse } from '../../http/envelope.js';
import { defineRoutes } from '../../http/pipeline.js';
import { AGENT_ARTIFACTS, DOWNLOADS_DIR, type DownloadsManifest } from './artifacts.js';

/** The manifest when it is of this server's version; else why not (the server answers 503). */
export function readManifest(serverVersion: string, dir = DOWNLOADS_DIR): DownloadsManifest | string {
  let manifest: DownloadsManifest;
  try {
    manifest = JSON.parse(fs.readFileSync(path.join(dir, 'manifest.json'), 'utf8')) as DownloadsManifest;
  } catch {
    return 'no dist/downloads/manifest.json';
  }
  if (manifest.server_version !== serverVersion) return `built for version ${manifest.server_version}, the server is ${serverVersion}`;
  return manifest;
}

const LOOPBACK = /^(localhost|127(?:\.\d{1,3}){3}|\[::1\])$/i;

/** Where agents reach this server: PUBLIC_URL, else the origin of the request (the browser's address). */
export function serverUrlFor(ctx: Context, publicUrl: string | undefined) {
  if (publicUrl) return { url: publicUrl, source: 'PUBLIC_URL' as const, loopback: LOOPBACK.test(new URL(publicUrl).hostname) };
  let url: URL;
  try {
    url = new URL(`${ctx.protocol}://${ctx.host}`);
  } catch {
    throw new AppError('validation_failed', { reason: `the Host header '${ctx.host}' is not a host name` });
  }
  return { url: url.origin, source: 'request' as const, loopback: LOOPBACK.test(url.hostname) };
}

const fileSchema = Joi.object({
  file: Joi.string().description('The name to download: GET /downloads/{file}'),
  kind: Joi.string().valid('executable', 'javascript'),
  runs: Joi.string().description('Which machines it runs on'),
  platform: Joi.string().allow(null).description('`linux`, or null: any machine with Node.js 18 or later'),
  arch: Joi.string().allow(null).description('`x64`, `arm64`, or null'),
  size: Joi.number().integer().description('Bytes'),
  sha256: Joi.string().description('Hex SHA-256 of the file'),
  url: Joi.string().description('Its absolute URL on this server'),
}).label('AgentDownload');

const SUM_SUFFIX = '.sha256';

export const downloadRoutes = defineRoutes([
  {
    operationId: 'listAgentDownloads', method: 'get', path: '/api/v1/downloads', group: 'Downloads', auth: 'public', errors: [503],
    summary: "The discovery agent's builds, of this server's version, and the address agents should use for this server",
    response: Joi.object({
      agent_version: Joi.string(),
      server_url: Joi.string().description('PUBLIC_URL, else the address this request came to'),
      server_url_source: Joi.string().valid('PUBLIC_URL', 'request'),
      server_url_is_loopback: Joi.boolean().description('True when server_url names this machine only (localhost, 127.x, ::1): an agent elsewhere cannot reach it; set PUBLIC_URL'),
      files: Joi.array().items(fileSchema),
    }).label('AgentDownloads'),
    handler: async ({ services, ctx }) => {
      const manifest = readManifest(services.config.serverVersion);
      if (typeof manifest === 'string') throw new AppError('downloads_not_built', { reason: manifest });
      const server = serverUrlFor(ctx, services.config.publicUrl);
      const built = new Map(manifest.files.map((f) => [f.file, f]));
      return {
        agent_version: manifest.agent_version,
        server_url: server.url, server_url_source: server.source, server_url_is_loopback: server.loopback,
        files: AGENT_ARTIFACTS.filter((a) => built.has(a.file)).map((a) => ({
          ...a, size: built.get(a.file)!.size, sha256: built.get(a.file)!.sha256, url: `${server.url}/downloads/${a.file}`,
        })),
      };
    },
  },
  {
    operationId: 'downloadAgent', method: 'get', path: '/downloads/:file', group: 'Downloads', auth: 'public', errors: [404, 503],
    summary: 'One build of the agent (`netinventory-agent-linux-x64`, …), or `<file>.sha256`: its SHA-256 in `sha256sum -c` form',
    params: Joi.object({ file: Joi.string().max(100).required() }),
    handler: async ({ services, params }) => {
      const asked = params.file as string;
      const name = asked.endsWith(SUM_SUFFIX) ? asked.slice(0, -SUM_SUFFIX.length) : asked;
      if (!AGENT_ARTIFACTS.some((a) => a.file === name)) throw new AppError('download_not_found', { file: asked });
      const manifest = readManifest(services.config.serverVersion);
      if (typeof manifest === 'string') throw new AppError('downloads_not_built', { reason: manifest });
      const entry = manifest.files.find((f) => f.file === name);
      if (!entry) throw new AppError('downloads_not_built', { reason: `${name} missing from the manifest` });
      if (asked !== name) return new FileResponse('text/plain; charset=utf-8', asked, `${entry.sha256}  ${name}\n`);
      const file = path.join(DOWNLOADS_DIR, name);
      if (!fs.existsSync(file)) throw new AppError('downloads_not_built', { reason: `${name} missing` });
      return new FileResponse('application/octet-stream', name, fs.createReadStream(file), entry.size);
    },
  },
]);
