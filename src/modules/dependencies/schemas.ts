import Joi from 'joi';
import { body, color, description, listQuery, name, orderQuery, tagIds, timestamp, uuid } from '../../http/schemas.js';

export const DEPENDENCY_TYPES = ['RequestPath', 'HubAndSpoke'] as const;
export const EDGE_STYLES = ['Straight', 'SmoothStep', 'Bezier'] as const;
export const DEPENDENCY_ORDER_FIELDS = ['name', 'dependency_type', 'created_at', 'updated_at'] as const;

// Lower-cased: the trigger that drops deleted members matches the stored text against `id::text`.
const ids = () => Joi.array().items(uuid().lowercase()).max(1000).unique();
/** `{"type":"Services","service_ids":[…]}` or `{"type":"Bindings","binding_ids":[…]}`, in chain order (decisions §6). */
export const members = () =>
  Joi.object({
    type: Joi.string().valid('Services', 'Bindings').required(),
    service_ids: ids().when('type', { is: 'Services', then: Joi.required(), otherwise: Joi.forbidden() }),
    binding_ids: ids().when('type', { is: 'Bindings', then: Joi.required(), otherwise: Joi.forbidden() }),
  }).unknown(false);

const common = {
  id: uuid(),
  name: name().required(),
  network_id: uuid().lowercase().required(),
  description: description(),
  color: color().required(),
};

export const dependencyCreate = body({
  ...common,
  dependency_type: Joi.string().valid(...DEPENDENCY_TYPES).default('RequestPath'),
  edge_style: Joi.string().valid(...EDGE_STYLES).default('SmoothStep'),
  members: members().default({ type: 'Services', service_ids: [] }),
  tags: tagIds().default([]),
});

/** Spec §4.3: every field but description and source required; network_id must be the stored one. */
export const dependencyUpdate = body({
  ...common,
  dependency_type: Joi.string().valid(...DEPENDENCY_TYPES).required(),
  edge_style: Joi.string().valid(...EDGE_STYLES).required(),
  members: members().required(),
  tags: tagIds().required(),
  expected_updated_at: timestamp().allow(null),
});

export const dependencyListQuery = listQuery({
  ...orderQuery(DEPENDENCY_ORDER_FIELDS), network_id: uuid(), dependency_type: Joi.string().valid(...DEPENDENCY_TYPES),
});

const ts = () => timestamp().allow(null);
export const dependencyResponse = Joi.object({
  id: uuid(), organization_id: uuid(), network_id: uuid(), name: Joi.string(), description: Joi.string().allow(null), color: color(),
  dependency_type: Joi.string().valid(...DEPENDENCY_TYPES), edge_style: Joi.string().valid(...EDGE_STYLES), members: members(),
  tags: Joi.array().items(uuid()), source: Joi.object(), lineage_id: uuid().allow(null), created_at: ts(), updated_at: ts(),
  valid_from: ts(), valid_to: ts(),
}).label('Dependency');
