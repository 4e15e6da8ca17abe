"""acpstack.testing"""
