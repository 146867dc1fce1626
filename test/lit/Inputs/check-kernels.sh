# Checks a `cbc dump --kernels` listing: it names N kernels, exactly the given targets have a
# cubin, each target lists all N kernels, and every kernel has 0 spill bytes (-1, ptxas
# reporting nothing for a kernel, fails too) and an occupancy of at least one block per SM.
#   sh check-kernels.sh LISTING TARGET...
listing=$1
shift
awk -v want="$*" '
  function fail(msg) { print "check-kernels: " FILENAME ": " msg > "/dev/stderr"; bad = 1 }
  /^[0-9]+ kernels, / { n = $1 + 0; next }
  /^target [a-z0-9_]+: cubin [0-9]+ bytes$/ {
    t = substr($2, 1, length($2) - 1); targets = targets (targets == "" ? "" : " ") t
    if ($4 + 0 <= 0) fail("empty cubin for " t)
    count[t] = 0; next
  }
  /^  cbc_/ {
    if (t == "") { fail("kernel before any target: " $0); next }
    count[t]++
    if ($0 !~ /^  cbc_[a-z0-9_]+ +regs +[0-9]+  spills +0  smem +[0-9]+  threads +[0-9]+  blocks\/SM +[1-9][0-9]*  occupancy +[0-9]+% \([a-z]+\)$/) fail(t ": " $0)
  }
  END {
    if (n <= 0) fail("no kernel count")
    if (targets != want) fail("targets \"" targets "\", expected \"" want "\"")
    for (t in count) if (count[t] != n) fail(t " lists " count[t] " kernels, not " n)
    exit bad
  }' "$listing"
