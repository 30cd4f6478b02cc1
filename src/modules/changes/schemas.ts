import Joi from 'joi';
import { pagination, timestamp, uuid } from '../../http/schemas.js';
import { sessionSummaryField } from '../daemons/schemas.js';

export const changesListQuery = Joi.object({
  ...pagination,
  network_id: uuid().description('The network whose scans to list (left out: every network the caller may see)'),
  unacknowledged: Joi.boolean().description('true: only the scans nobody acknowledged yet'),
});

export const changesParams = Joi.object({ session_id: uuid().required() });

export const scanChangesResponse = Joi.object({
  session_id: uuid(), network_id: uuid(), daemon_id: uuid(), daemon_name: Joi.string().allow(null).description('Null when the daemon was deleted since'),
  phase: Joi.string().valid('Complete', 'Failed', 'Cancelled'),
  started_at: timestamp().allow(null), finished_at: timestamp().allow(null), created_at: timestamp(),
  summary: sessionSummaryField, // never null here: only scans with a summary are listed
  acknowledged_at: timestamp().allow(null), acknowledged_by: uuid().allow(null).description('The user who acknowledged it (null: nobody yet, or a removed user)'),
}).label('ScanChanges');
