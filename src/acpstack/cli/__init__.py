"""acpstack.cli"""
