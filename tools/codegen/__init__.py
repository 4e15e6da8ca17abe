"""Code generator for acpstack's wire types (not shipped with the package)."""
