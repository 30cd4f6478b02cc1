// Account-side entities: small, unversioned, written through the ORM's unit of work.
// (Inventory resources keep history and are written in SQL; see src/core/history.ts.)
import { defineEntity, p } from '@mikro-orm/core';

import { ROLES, type Role } from '../../core/scope.js';

export { ROLES, type Role };

export const OrganizationSchema = defineEntity({
  name: 'Organization',
  tableName: 'organizations',
  properties: {
    id: p.uuid().primary(),
    name: p.string().length(100),
    apiAccessEnabled: p.boolean().default(true),
    createdAt: p.datetime().onCreate(() => new Date()),
    updatedAt: p.datetime().onCreate(() => new Date()).onUpdate(() => new Date()),
  },
});
export class Organization extends OrganizationSchema.class {}
OrganizationSchema.setClass(Organization);

export const UserSchema = defineEntity({
  name: 'User',
  tableName: 'users',
  properties: {
    id: p.uuid().primary(),
    organizationId: p.uuid(),
    email: p.string(),
    passwordHash: p.string().hidden(),
    permissions: p.string().$type<Role>(),
    createdAt: p.datetime().onCreate(() => new Date()),
    updatedAt: p.datetime().onCreate(() => new Date()).onUpdate(() => new Date()),
  },
});
export class User extends UserSchema.class {}
UserSchema.setClass(User);

export const SessionSchema = defineEntity({
  name: 'Session',
  tableName: 'sessions',
  properties: {
    idHash: p.string().primary(),
    userId: p.uuid(),
    expiresAt: p.datetime(),
    createdAt: p.datetime().onCreate(() => new Date()),
  },
});
export class Session extends SessionSchema.class {}
SessionSchema.setClass(Session);

export const UserApiKeySchema = defineEntity({
  name: 'UserApiKey',
  tableName: 'user_api_keys',
  properties: {
    id: p.uuid().primary(),
    organizationId: p.uuid(),
    userId: p.uuid(),
    name: p.string().length(100),
    keyHash: p.string().hidden(),
    permissions: p.string().$type<Role>(),
    networkIds: p.array().$type<string[]>().nullable(),
    expiresAt: p.datetime().nullable(),
    isEnabled: p.boolean().default(true),
    lastUsedAt: p.datetime().nullable(),
    createdAt: p.datetime().onCreate(() => new Date()),
    updatedAt: p.datetime().onCreate(() => new Date()).onUpdate(() => new Date()),
  },
});
export class UserApiKey extends UserApiKeySchema.class {}
UserApiKeySchema.setClass(UserApiKey);

export const accountEntities = [OrganizationSchema, UserSchema, SessionSchema, UserApiKeySchema];
