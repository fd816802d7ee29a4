import type { Principal } from '../engine/define.js';

/** The roles of the property service (UserRole). */
export const USER_ROLES = ['user', 'admin', 'moderator', 'technical'] as const;
export type UserRole = (typeof USER_ROLES)[number];

export const isAdmin = (p: Principal | null): boolean => p?.role === 'admin';
/** Roles that see and edit every property, not only their own. */
export const seesAllProperties = (p: Principal | null): boolean => p?.role === 'admin' || p?.role === 'moderator';
/** Roles that read every user record. */
export const readsAllUsers = seesAllProperties;
/** Roles that write reference data (federal states, heating types). */
export const writesReferenceData = (p: Principal | null): boolean => p?.role === 'admin' || p?.role === 'technical';
