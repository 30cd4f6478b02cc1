// CSV exports (RFC 4180): a header row, CRLF line ends, fields quoted when they hold a comma, a
// quote or a line break. Values are flattened: a list of entities or ids becomes its ids joined
// by `;`, any other object its JSON. The rows come page by page from the resource's own list (its
// filters, tenancy and `at`), pulled only as fast as the client reads: memory stays flat however
// long the list.
import { Readable } from 'node:stream';
import type Joi from 'joi';
import { FileResponse, type Page } from './envelope.js';

const PAGE = 500;

/**
 * Text a spreadsheet would run as a formula (=, +, -, @, tab, CR first: OWASP's CSV injection) is
 * written behind a `'`, which spreadsheets show as text. Names and descriptions come from the
 * network (a daemon reports what hosts call themselves), so an export must not carry formulas.
 */
const FORMULA_START = /^[=+\-@\t\r]/;

export function csvField(value: unknown): string {
  let text: string;
  if (value === null || value === undefined) text = '';
  else if (Array.isArray(value)) text = value.map((v) => (v && typeof v === 'object' ? String((v as { id?: unknown }).id ?? JSON.stringify(v)) : String(v))).join(';');
  else if (typeof value === 'object') text = JSON.stringify(value);
  else text = String(value);
  // Whatever the text came from (a list's ids, an object's JSON): only a real number may start with '-'.
  if (typeof value !== 'number' && typeof value !== 'bigint' && FORMULA_START.test(text)) text = `'${text}`;
  return /[",\r\n]/.test(text) ? `"${text.replace(/"/g, '""')}"` : text;
}

export const csvLine = (values: unknown[]) => `${values.map(csvField).join(',')}\r\n`;

/** The columns of a response schema: its keys, in declaration order. */
export function csvColumns(response: Joi.Schema): string[] {
  return Object.keys((response.describe() as { keys?: Record<string, unknown> }).keys ?? {});
}

/**
 * Streams every item of a list as CSV, reading it in pages as the client takes them. The first page
 * is read before answering, so a refused request (a filter on a network out of reach) is a 4xx.
 */
export async function csvExport(filename: string, columns: string[], page: (offset: number, limit: number) => Promise<Page<Record<string, unknown>>>): Promise<FileResponse> {
  const first = await page(0, PAGE);
  async function* lines() {
    yield csvLine(columns);
    for (let offset = 0; ; offset += PAGE) {
      const { items } = offset === 0 ? first : await page(offset, PAGE);
      let chunk = '';
      for (const item of items) chunk += csvLine(columns.map((c) => item[c]));
      if (chunk) yield chunk;
      if (items.length < PAGE) return;
    }
  }
  return new FileResponse('text/csv; charset=utf-8', filename, Readable.from(lines(), { objectMode: false }));
}
