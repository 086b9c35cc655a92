"""Fair share between tenants: what one tenant's growth costs the calls that follow (issue 26)."""
