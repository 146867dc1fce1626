# Talks to `cbc run` over a pipe one request at a time: writes a line, waits (with a timeout)
# for that request's result while keeping standard input open, and only then writes the next.
# It passes only if each result arrives before the input closes, i.e. if cbc run serves lines
# as they arrive and flushes each result. Prints the results it got, in order.
#   python3 run-interactive.py [--stream] CBC ARGS...   (one request line per line of stdin)
import json
import os
import select
import subprocess
import sys
import time

TIMEOUT_S = 60


# Lines already read from the pipe but not yet returned: select() sees only the pipe, not them.
pending = b""


def read_line(proc):
    global pending
    deadline = time.monotonic() + TIMEOUT_S
    while b"\n" not in pending:
        left = deadline - time.monotonic()
        if left <= 0 or not select.select([proc.stdout], [], [], left)[0]:
            proc.kill()
            sys.exit("run-interactive: no result within %d s while the input is still open" % TIMEOUT_S)
        chunk = os.read(proc.stdout.fileno(), 65536)
        if not chunk:
            sys.exit("run-interactive: cbc run closed its output early (status %s)" % proc.wait())
        pending += chunk
    line, pending = pending.split(b"\n", 1)
    return json.loads(line)


def main():
    requests = [l for l in sys.stdin.read().splitlines() if l.strip()]
    proc = subprocess.Popen(sys.argv[1:], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    for i, request in enumerate(requests):
        proc.stdin.write((request + "\n").encode())
        proc.stdin.flush()
        while True:
            row = read_line(proc)
            if row.get("index") != i:
                sys.exit("run-interactive: got %s while waiting for request %d" % (row, i))
            if "finish_reason" in row:
                break
            print("token", row["index"], row["token"])  # a --stream line, before the result
        print("result", row["index"], row["finish_reason"], len(row["tokens"]))
        sys.stdout.flush()
    proc.stdin.close()
    rest = pending + proc.stdout.read()
    if rest.strip():
        sys.exit("run-interactive: output after the last result: %r" % rest)
    sys.exit(proc.wait())


main()
