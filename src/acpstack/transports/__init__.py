"""acpstack.transports"""
