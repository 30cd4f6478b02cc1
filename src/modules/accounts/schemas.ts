import Joi from 'joi';
import { body, entityId, idList, name, pagination, timestamp, uuid } from '../../http/schemas.js';
import { ROLES } from './entities.js';
import { PASSWORD_MESSAGES, passwordProblem } from './passwordPolicy.js';

export const email = () => Joi.string().trim().email({ tlds: false }).max(254);
/** A new password: the policy of passwordPolicy.ts, checked against the body's own `email`. */
export const password = () => Joi.string().min(10).max(200)
  .custom((value: string, helpers) => {
    const email = (helpers.state.ancestors[0] as { email?: unknown } | undefined)?.email;
    const problem = passwordProblem(value, typeof email === 'string' ? email : undefined);
    return problem ? helpers.error(`password.${problem}`) : value;
  })
  .messages(Object.fromEntries(Object.entries(PASSWORD_MESSAGES).map(([k, m]) => [`password.${k}`, `{{#label}} ${m}`])));
export const role = () => Joi.string().valid(...ROLES);

export const registerBody = body({ email: email().required(), password: password().required(), organization_name: name().required() });
export const loginBody = body({ email: email().required(), password: Joi.string().max(200).required() });
export const userCreateBody = body({
  id: entityId(), email: email().required(), password: password().required(), permissions: role().default('Viewer'),
  network_ids: Joi.array().items(uuid()).unique().max(1000).default([]),
});
export const userUpdateBody = body({
  id: entityId(), email: Joi.any().strip(), permissions: role().required(),
  network_ids: Joi.array().items(uuid()).unique().max(1000).default([]),
});
export const organizationBody = body({ id: entityId(), name: name().required(), api_access_enabled: Joi.boolean().required() });
export const userListQuery = Joi.object({ ...pagination, ids: idList() });

export const userResponse = Joi.object({
  id: uuid(), email: Joi.string(), organization_id: uuid(), permissions: role(), network_ids: Joi.array().items(uuid()),
  created_at: timestamp(), updated_at: timestamp(),
}).label('User');
export const meResponse = userResponse.keys({
  operator: Joi.boolean().description('Whether the queue dashboard (/admin/queues, every organization\'s jobs) is open to this user: granted with `npm run operator -- grant`, OPERATOR_EMAILS or OPERATOR_ORGANIZATION_ID'),
}).label('CurrentUser');
export const organizationResponse = Joi.object({
  id: uuid(), name: Joi.string(), api_access_enabled: Joi.boolean(), created_at: timestamp(), updated_at: timestamp(),
}).label('Organization');
