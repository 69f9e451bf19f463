/** Every Management API operation, one import per resource. */
import { auditOperations } from './audit/operations.js';
import { ownConfigOperations } from './config/operations.js';
import { socialCallbackOperations } from './config/social-callbacks.js';
import { clientOperations } from './clients/operations.js';
import { jwksOperations } from './jwks/operations.js';
import type { Operation } from './operation.js';
import { registrationTokenOperations } from './registration-tokens/operations.js';
import { claimsOperations } from './resources/claims-operations.js';
import { resourceOperations } from './resources/operations.js';
import { sessionOperations } from './sessions/operations.js';
import { tenantConfigOperations } from './tenants/config-operations.js';
import { tenantOperations } from './tenants/operations.js';
import { userOperations } from './users/operations.js';

export const allOperations: Operation[] = [...clientOperations, ...userOperations, ...sessionOperations, ...registrationTokenOperations, ...jwksOperations, ...auditOperations, ...tenantOperations, ...tenantConfigOperations, ...ownConfigOperations, ...socialCallbackOperations, ...resourceOperations, ...claimsOperations];
