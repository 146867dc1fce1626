# Runs a command with a terminal as its standard input (a pseudo-terminal), types the lines of
# this script's stdin into it, then Ctrl-D, and prints the command's stdout and stderr. For
# `cbc run`, which tells a terminal user where it is reading from and how to end.
#   python3 run-on-tty.py COMMAND ARGS...
import os
import pty
import subprocess
import sys

master, slave = pty.openpty()
proc = subprocess.Popen(sys.argv[1:], stdin=slave, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
os.close(slave)
for line in sys.stdin.read().splitlines():
    os.write(master, (line + "\n").encode())
os.write(master, b"\x04")
try:
    out, err = proc.communicate(timeout=60)
except subprocess.TimeoutExpired:
    proc.kill()
    sys.exit("run-on-tty: the command did not end within 60 s of Ctrl-D")
os.close(master)
sys.stdout.write(out.decode())
sys.stdout.write(err.decode())
sys.exit(proc.returncode)
