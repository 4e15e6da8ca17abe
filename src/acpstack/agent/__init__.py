"""acpstack.agent"""
