"""acpstack.schema"""
