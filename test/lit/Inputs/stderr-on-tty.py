# Runs a command with a terminal (a pseudo-terminal) as its standard error, and prints what it
# wrote there, carriage returns shown as "<CR>", then its exit status as "status N". For the
# progress that `cbc run` draws only on a terminal.
#   python3 stderr-on-tty.py COMMAND ARGS...
import os
import pty
import subprocess
import sys

master, slave = pty.openpty()
proc = subprocess.Popen(sys.argv[1:], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=slave)
os.close(slave)
chunks = []
while True:
    try:
        data = os.read(master, 4096)
    except OSError:  # EIO: the command closed its end
        break
    if not data:
        break
    chunks.append(data)
status = proc.wait(timeout=60)
os.close(master)
sys.stdout.write(b"".join(chunks).decode(errors="replace").replace("\r\n", "\n").replace("\r", "<CR>"))
print("status", status)
