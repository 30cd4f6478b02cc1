import Joi from 'joi';
import { body, color, description, entityId, listQuery, name, orderQuery, sourceResponse, tagIds, timestamp, uuid } from '../../http/schemas.js';

export const DEPENDENCY_TYPES = ['RequestPath', 'HubAndSpoke'] as const;
export const EDGE_STYLES = ['Straight', 'SmoothStep', 'Bezier'] as const;
/** Scanopy's own aliases: Step draws as SmoothStep, SimpleBezier as Bezier; stored as the latter. */
const EDGE_STYLE_ALIASES: Record<string, (typeof EDGE_STYLES)[number]> = { Step: 'SmoothStep', SimpleBezier: 'Bezier' };
const edgeStyle = () => Joi.string().valid(...EDGE_STYLES, ...Object.keys(EDGE_STYLE_ALIASES))
  .description('Step and SimpleBezier (Scanopy) are stored as SmoothStep and Bezier');
// On the body, not the field: joi skips a field's rules once a value matches its valid() list.
const canonicalEdgeStyle = (value: { edge_style?: string }) =>
  value.edge_style && EDGE_STYLE_ALIASES[value.edge_style] ? { ...value, edge_style: EDGE_STYLE_ALIASES[value.edge_style] } : value;
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
  id: entityId(),
  name: name().required(),
  network_id: uuid().lowercase().required(),
  description: description(),
  color: color().required(),
};

export const dependencyCreate = body({
  ...common,
  dependency_type: Joi.string().valid(...DEPENDENCY_TYPES).default('RequestPath'),
  edge_style: edgeStyle().default('SmoothStep'),
  members: members().default({ type: 'Services', service_ids: [] }),
  tags: tagIds().default([]),
}).custom(canonicalEdgeStyle);

/** Spec §4.3: every field but description and source required; network_id must be the stored one. */
export const dependencyUpdate = body({
  ...common,
  dependency_type: Joi.string().valid(...DEPENDENCY_TYPES).required(),
  edge_style: edgeStyle().required(),
  members: members().required(),
  tags: tagIds().required(),
  expected_updated_at: timestamp().allow(null),
}).custom(canonicalEdgeStyle);

export const dependencyListQuery = listQuery({
  ...orderQuery(DEPENDENCY_ORDER_FIELDS), network_id: uuid(), dependency_type: Joi.string().valid(...DEPENDENCY_TYPES),
});

const membersResponse = Joi.alternatives(
  Joi.object({ type: Joi.string().valid('Services'), service_ids: Joi.array().items(uuid()) }).label('ServiceMembers'),
  Joi.object({ type: Joi.string().valid('Bindings'), binding_ids: Joi.array().items(uuid()) }).label('BindingMembers'),
);
const ts = () => timestamp().allow(null);
export const dependencyResponse = Joi.object({
  id: uuid(), organization_id: uuid(), network_id: uuid(), name: Joi.string(), description: Joi.string().allow(null), color: color(),
  dependency_type: Joi.string().valid(...DEPENDENCY_TYPES), edge_style: Joi.string().valid(...EDGE_STYLES), members: membersResponse,
  tags: Joi.array().items(uuid()), source: sourceResponse(), lineage_id: uuid().allow(null), created_at: ts(), updated_at: ts(),
  valid_from: ts(), valid_to: ts(),
}).label('Dependency');
