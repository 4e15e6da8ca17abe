"""An agent for the proxy tests: it keeps every byte it reads in $TEE_IN and every byte it
writes in $TEE_OUT, so a test can compare both ends of `acpstack inspect` byte for byte.

For each line read it writes one line: a response `{"result": {"len": N}}` to a request,
or, for `{"method": "big"}`, a 1 MiB response. It also writes a log line to stderr and a
line that is not JSON to stdout. At end of input it writes a last line without a newline
and exits with code 7."""

import json
import os

tee_in = open(os.environ["TEE_IN"], "wb")
tee_out = open(os.environ["TEE_OUT"], "wb")


def out(data: bytes) -> None:
    os.write(1, data)
    tee_out.write(data)
    tee_out.flush()


os.write(2, b"tee agent: started\n")
out(b"not json: a log line on stdout\n")
buffered = b""
while True:
    chunk = os.read(0, 65536)
    if not chunk:
        break
    tee_in.write(chunk)
    tee_in.flush()
    buffered += chunk
    *lines, buffered = buffered.split(b"\n")
    for line in lines:
        try:
            message = json.loads(line)
        except ValueError:
            continue
        if not isinstance(message, dict) or "id" not in message:
            continue
        if message.get("method") == "big":
            result = {"blob": "\u00e9" * (512 * 1024)}
        else:
            result = {"len": len(line), "text": "caf\u00e9 \u2028 line"}
        reply = {"jsonrpc": "2.0", "id": message["id"], "result": result}
        out(json.dumps(reply, ensure_ascii=False).encode() + b"\r\n")
out(b'{"jsonrpc":"2.0","method":"bye","params":{}}')
raise SystemExit(7)
