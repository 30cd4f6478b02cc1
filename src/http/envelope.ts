// The response envelope (spec §4.1) and the mapping of every failure to it (decisions §1).
import type { Readable } from 'node:stream';
import type { Context, Next } from 'koa';
import Joi from 'joi';
import { AppError, fromForeignKeyViolation, fromUniqueViolation, type ErrorParams } from '../core/errors.js';
import type { AppConfig } from '../config.js';
import { fromJoi } from './validation.js';
import { toJsonBody } from './jsonText.js';

export interface Pagination {
  total_count: number;
  limit: number;
  offset: number;
  has_more: boolean;
}

/** What a list handler returns; the pipeline turns it into data + meta.pagination. */
/** A file answered as it is, not in the envelope (exports): its type and download name. */
export class FileResponse {
  /** A string, bytes (a topology export made on a thread), or a stream written as it is read (a CSV export). */
  /** `length`: the byte count of a file sent as stored (a download, not compressed, its progress shown). */
  constructor(readonly contentType: string, readonly filename: string, readonly body: string | Buffer | Readable, readonly length?: number) {}
}

/** A long-lived response written as it goes (Server-Sent Events): not compressed, not buffered. */
export class StreamResponse {
  constructor(readonly contentType: string, readonly body: Readable, readonly onClose: () => void) {}
}

/** A page of a feed read after a cursor: data is the items, meta.cursor says where to go on. */
export class CursorPage<T = unknown> {
  constructor(readonly items: T[], readonly cursor: { after: string; next: string; has_more: boolean }) {}
}

export class Page<T = unknown> {
  constructor(readonly items: T[], readonly pagination: Pagination) {}

  static of<T>(items: T[], total: number, limit: number, offset: number): Page<T> {
    return new Page(items, { total_count: total, limit, offset, has_more: limit > 0 && offset + items.length < total });
  }
}

export function meta(config: AppConfig, extra: Record<string, unknown> = {}) {
  return { api_version: config.apiVersion, server_version: config.serverVersion, ...extra };
}

export function sendError(ctx: Context, config: AppConfig, err: AppError): void {
  ctx.status = err.status;
  const body: Record<string, unknown> = { success: false, error: err.message, code: err.code };
  if (Object.keys(err.params).length) body.params = err.params;
  body.meta = meta(config);
  sendJson(ctx, body);
}

/**
 * A JSON answer, serialized once here. Given an object, Koa stringifies it to learn its length
 * (koa-compress asks) and again to send or compress it: 2 × ~120 ms on a 20 MB topology diff.
 */
export function sendJson(ctx: Context, value: unknown): void {
  ctx.type = 'application/json';
  ctx.body = toJsonBody(value);
}

/** The largest JSON body accepted (koa-body's jsonLimit); a larger one is 413 payload_too_large. */
export const BODY_LIMIT_BYTES = 1024 * 1024;

/** Translates whatever a request threw into an AppError; anything unexpected is a logged 500. */
export function toAppError(err: unknown, requestId: string): AppError {
  if (err instanceof AppError) return err;
  if (Joi.isError(err)) return fromJoi(err as Joi.ValidationError, 'body');
  const e = err as { status?: number; statusCode?: number; type?: string; name?: string; message?: string; expose?: boolean; code?: string; constraint?: string };
  const status = e.status ?? e.statusCode;
  if (status === 413 || e.type === 'entity.too.large') return new AppError('payload_too_large', { limit: BODY_LIMIT_BYTES });
  const unsupported = /^Unsupported Content-Encoding: (.*)$/.exec(e.message ?? ''); // inflation's message, its only mark
  if (unsupported || e.type === 'encoding.unsupported') return new AppError('unsupported_content_encoding', { encoding: unsupported?.[1] ?? 'this' });
  if (status === 415) return new AppError('unsupported_media_type');
  // A gzip / deflate / br body that does not decompress (zlib's Z_* and brotli's ERR__* codes).
  if (/^(Z_|ERR__)/.test(e.code ?? '')) return new AppError('body_unreadable', { encoding: 'Content-Encoding', reason: e.message ?? 'corrupt' });
  // A "__proto__" key (refused by the JSON parser to prevent prototype pollution) or any JSON syntax error.
  if ((e.name === 'SyntaxError' && status === 400) || /forbidden prototype property/.test(e.message ?? '')) {
    return new AppError('malformed_json', { reason: e.message ?? 'syntax error' }, `Request body is not valid JSON: ${e.message}`);
  }
  if (status === 400 && (e.type === 'entity.parse.failed' || /JSON|Unexpected|invalid/i.test(e.message ?? ''))) {
    return new AppError('malformed_json');
  }
  if (status && status >= 400 && status < 500 && e.expose) {
    return new AppError('validation_failed', { field: 'body', reason: e.message ?? 'bad request' });
  }
  const conflict = fromUniqueViolation(e as Parameters<typeof fromUniqueViolation>[0]) ?? fromForeignKeyViolation(e);
  if (conflict) return conflict;
  // PostgreSQL refusing input that slipped past validation (an out-of-range number, a NUL character
  // in a string or in JSON): still the client's fault.
  if (['22P02', '22003', '22007', '22008', '22009', '22021', '22P05'].includes(e.code ?? '')) {
    return new AppError('validation_failed', { field: 'request', reason: 'value out of range or malformed' });
  }
  // The database went away (connection refused or terminated, server shutting down, too many
  // clients): the request may succeed later, so 503 with Retry-After, not a 500.
  if (isDatabaseUnavailable(e)) return new AppError('service_unavailable', { reason: 'database unavailable', retry_after: 5 });
  return new AppError('internal_error', { request_id: requestId });
}

const DB_UNAVAILABLE_SQLSTATES = ['57P01', '57P02', '57P03', '53300', '3D000', '08000', '08001', '08003', '08006'];

function isDatabaseUnavailable(e: { code?: string; message?: string; name?: string }): boolean {
  if (DB_UNAVAILABLE_SQLSTATES.includes(e.code ?? '')) return true;
  if (['ECONNREFUSED', 'ECONNRESET', 'EPIPE', 'ETIMEDOUT'].includes(e.code ?? '')) return true;
  return /Connection terminated|connection (is )?closed|timeout exceeded when trying to connect|Client has encountered a connection error|is not currently accepting connections/i.test(e.message ?? '');
}

/** Outermost middleware: every error below becomes an envelope; 500s are logged with the stack. */
export function errorEnvelope(config: AppConfig) {
  return async (ctx: Context, next: Next) => {
    try {
      await next();
    } catch (err) {
      const appError = toAppError(err, ctx.state.requestId);
      if (appError.code === 'internal_error') ctx.state.log?.error({ err }, 'unhandled error');
      if (appError.params.retry_after != null) ctx.set('Retry-After', String(appError.params.retry_after));
      sendError(ctx, config, appError);
    }
  };
}

export type { ErrorParams };
