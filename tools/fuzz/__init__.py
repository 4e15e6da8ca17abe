"""A protocol fuzzer for ACP agents and clients (not shipped with the package).

`python -m tools.fuzz --target agent --inputs 1000000 --seed 1` sends hostile lines to a
real `acpstack agent` process (or any agent given after `--`) and checks that it never
dies, never hangs, writes only valid JSON-RPC and answers each request exactly once.
`--target client` does the same to a real `ClientRuntime` process, with the fuzzer
playing the agent. See docs/robustness.md for what the inputs cover and the last results.
"""
