/** Every Management API operation, one import per resource. */
import { clientOperations } from './clients/operations.js';
import type { Operation } from './operation.js';

export const allOperations: Operation[] = [...clientOperations];
