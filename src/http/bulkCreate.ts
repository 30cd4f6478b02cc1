// Bulk create: `POST <collection>/bulk` takes a JSON array of the resource's create
// bodies and runs the resource's own create for each, in order, in ONE transaction: all or none,
// one history instant (the transaction's now()) and one event batch (netinv.batch_id is set per
// transaction). The route itself is declared from the resource's create route (resourceRoutes.ts,
// `bulkCreateRoute`); this file holds its body schema and the per-item error reporting.
//
// Errors name the item: every item is validated by the create's own schema before anything is
// written, and all failing items are reported at once (`params.errors[].index`); a refusal at
// write time (403 on a network out of reach, 409 duplicate address…) stops the transaction and
// names its item too.
import Joi from 'joi';
import { AppError, fromForeignKeyViolation, fromUniqueViolation, type ErrorParams } from '../core/errors.js';
import { fromJoi } from './validation.js';

/** At most this many items per request (400 validation_failed beyond). */
export const BULK_CREATE_MAX_ITEMS = 1000;
/**
 * The JSON body a bulk create accepts (the other routes take 1 MiB): 1,000 hosts with two
 * addresses and two ports are ~0.3 MB, but with services, bindings and descriptions a host is
 * 1–2 KB, and a full batch would not fit in 1 MiB.
 */
export const BULK_CREATE_BODY_LIMIT_BYTES = 8 * 1024 * 1024;

type Report = Joi.ErrorReport;

/** One item's joi reports as the ValidationError fromJoi reads, paths and messages relative to the item. */
function itemValidationError(reports: Report[]): Joi.ValidationError {
  const details = reports.map((r) => ({
    // joi labels a message with the full path (`[700].ip_addresses[0].ip_address must be…`): drop the item's index.
    message: r.toString().replace(/^\[\d+\](\.)?/, (_, dot: string | undefined) => (dot ? '' : 'item')),
    path: r.path.slice(1),
    type: r.code,
    context: r.local,
  }));
  return new Joi.ValidationError(details.map((d) => d.message).join('. '), details, undefined);
}

/**
 * Joi's reports of a bulk body → one 400 naming each failing item by index (`params.errors[]`:
 * index, field inside the item, code, message; the first also in `index` / `field`). A body that
 * is not a list of 1..1,000 items is answered as any body's validation error, items unjudged.
 */
function bulkValidationError(item: Joi.Schema, list: Joi.Schema) {
  return (reports: Report[]): Error => {
    const whole = reports.filter((r) => typeof (r.path[0] as unknown) !== 'number');
    if (whole.length) {
      return fromJoi(new Joi.ValidationError('', whole.map((r) => ({ message: r.toString(), path: r.path, type: r.code, context: r.local })), undefined), 'body', list);
    }
    const byIndex = new Map<number, Report[]>();
    for (const r of reports) {
      const index = r.path[0] as unknown as number; // joi types paths as strings; an array index is a number
      byIndex.set(index, [...(byIndex.get(index) ?? []), r]);
    }
    const perItem = [...byIndex.entries()].sort(([a], [b]) => a - b).map(([index, itemReports]) => ({ index, error: fromJoi(itemValidationError(itemReports), 'body', item) }));
    const errors = perItem.flatMap(({ index, error }) =>
      (error.params.errors as Array<{ field: string; code: string; message: string }>).map((e) => ({ index, ...e })));
    const { index, error: first } = perItem[0]!;
    const more = errors.length > 1 ? ` (${errors.length} errors in ${perItem.length} item${perItem.length > 1 ? 's' : ''}: see params.errors)` : '';
    const { errors: _ofFirstItem, ...firstParams } = first.params;
    return new AppError(first.code, { index, ...firstParams, errors }, `Validation failed: item ${index}: ${errors[0]!.message}${more}`);
  };
}

/** A JSON array of 1..1,000 bodies of `item` (the resource's create schema); errors name the item's index. */
export function bulkCreateBody(item: Joi.Schema): Joi.ArraySchema {
  const list = Joi.array().items(item).min(1).max(BULK_CREATE_MAX_ITEMS);
  return list.error(bulkValidationError(item, list))
    .description(`1 to ${BULK_CREATE_MAX_ITEMS} create bodies, created in order, all or none`);
}

/** What item `index`'s create threw, as the answer of the whole request: its own error, naming the item. */
export function itemRefused(index: number, err: unknown): unknown {
  const e = err as Parameters<typeof fromUniqueViolation>[0] & Parameters<typeof fromForeignKeyViolation>[0];
  const appError = err instanceof AppError ? err : fromUniqueViolation(e) ?? fromForeignKeyViolation(e);
  if (!appError) return err; // not the item's fault (the database went away): answered as any request's
  const field = typeof appError.params.field === 'string' ? appError.params.field : 'body';
  const params: ErrorParams = { ...appError.params, index, errors: [{ index, field, code: appError.code, message: appError.message }] };
  return new AppError(appError.code, params, `Item ${index}: ${appError.message}`);
}
