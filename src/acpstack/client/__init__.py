"""acpstack.client"""
