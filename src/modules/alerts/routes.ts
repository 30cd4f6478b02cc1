import { defineRoutes } from '../../http/pipeline.js';
import { idParams } from '../../http/schemas.js';
import { alertListQuery, alertResponse, alertRuleListQuery, alertRuleResponse, alertRuleWrite } from './schemas.js';
import { alertRuleService as rules, alertService as alerts, type AlertRuleInput } from './service.js';

const group = 'Alerts';
const rulesPath = '/api/v1/alert_rules';
const alertsPath = '/api/v1/alerts';

export const alertRoutes = defineRoutes([
  {
    group, auth: 'Viewer', operationId: 'listAlertRules', method: 'get', path: rulesPath, paginated: true, query: alertRuleListQuery, response: alertRuleResponse,
    summary: 'Alert rules of the networks the caller sees (or of network_id), oldest first',
    handler: ({ db, scope, query }) => rules.list(db, scope, query as { limit: number; offset: number; network_id?: string }),
  },
  {
    group, auth: 'Admin', operationId: 'createAlertRule', method: 'post', path: rulesPath, status: 201, body: alertRuleWrite, response: alertRuleResponse,
    summary: 'Alert on a kind of change of a network (new host, offline after a delay, back online, service or port added or removed, a new MAC for an address, a new vendor): one digest per scan, to webhooks and e-mail addresses, held during quiet hours',
    handler: ({ db, scope, body }) => rules.create(db, scope, body as AlertRuleInput),
  },
  {
    group, auth: 'Viewer', operationId: 'getAlertRule', method: 'get', path: `${rulesPath}/:id`, params: idParams, response: alertRuleResponse,
    summary: 'Get an alert rule',
    handler: ({ db, scope, params }) => rules.get(db, scope, params.id),
  },
  {
    group, auth: 'Admin', operationId: 'updateAlertRule', method: 'put', path: `${rulesPath}/:id`, params: idParams, body: alertRuleWrite, response: alertRuleResponse,
    summary: 'Replace an alert rule (its network stays)',
    handler: ({ db, scope, params, body }) => rules.update(db, scope, params.id, body as AlertRuleInput),
  },
  {
    group, auth: 'Admin', operationId: 'deleteAlertRule', method: 'delete', path: `${rulesPath}/:id`, params: idParams,
    summary: 'Delete an alert rule (the alerts it made stay)',
    handler: ({ db, scope, params }) => rules.remove(db, scope, params.id),
  },
  {
    group, auth: 'Viewer', operationId: 'listAlerts', method: 'get', path: alertsPath, paginated: true, query: alertListQuery, response: alertResponse,
    summary: 'Alert digests, newest first: what each scan made appear, disappear and change that a rule asked for',
    handler: ({ db, scope, query }) => alerts.list(db, scope, query as { limit: number; offset: number; network_id?: string; acknowledged?: boolean }),
  },
  {
    group, auth: 'Viewer', operationId: 'getAlert', method: 'get', path: `${alertsPath}/:id`, params: idParams, response: alertResponse,
    summary: 'Get an alert digest',
    handler: ({ db, scope, params }) => alerts.get(db, scope, params.id),
  },
  {
    group, auth: 'Member', operationId: 'acknowledgeAlert', method: 'post', path: `${alertsPath}/:id/acknowledge`, params: idParams, response: alertResponse,
    summary: 'Acknowledge an alert digest (seen; the first acknowledgement is kept)',
    handler: ({ db, scope, params }) => alerts.acknowledge(db, scope, params.id),
  },
]);
