/** The Management API resource and its scopes (spec section 5): defined in the resources domain. */
export { MANAGEMENT_RESOURCE, MANAGEMENT_SCOPES, isManagementScope, type ManagementScope } from '../resources/management-api.js';
