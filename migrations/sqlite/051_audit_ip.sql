-- The audit list's ip_address filter (spec 1.6, issue 19) reads this index, not the whole tenant.
CREATE INDEX audit_ip ON audit_entries (tenant_id, ip_address);
