# Runs a command and succeeds only if it exits with the given status: `not` accepts any
# non-zero status, but cbc promises exactly 2 for bad input and bad usage.
#   sh expect-status.sh STATUS COMMAND [ARGS...]
want=$1
shift
"$@"
got=$?
if [ "$got" -ne "$want" ]; then
  echo "expect-status: '$*' exited with $got, expected $want" >&2
  exit 1
fi
exit 0
