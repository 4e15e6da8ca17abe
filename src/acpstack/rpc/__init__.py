"""acpstack.rpc"""
