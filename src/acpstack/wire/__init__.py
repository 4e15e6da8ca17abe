"""acpstack.wire"""
