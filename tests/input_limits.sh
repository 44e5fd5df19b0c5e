#!/bin/sh
# input_limits.sh — LANGUAGE.md §9: "No input makes it hang or grow
# without bound: files, standard input and REPL lines have size limits
# with clear errors, reading a FIFO or device that never ends is refused
# or bounded, work grows about linearly with the number of statements, and
# a long REPL session uses memory in proportion to its model, not to the
# lines typed" (doc/limits.md).
#
#  * 400 000 `print 1` lines, from `nh -` and from the REPL without a
#    terminal, run within 64 MB of address space (nh takes 12 MB to start;
#    it took 1.8 GB when every line's parse was kept).  Skipped under
#    AddressSanitizer, which maps terabytes of shadow memory; there
#    test_session's count of texts and arenas holds.
#  * `nh -` runs each statement as it comes: the first one's output
#    appears while standard input is still open.
#  * `load` of a FIFO (which blocks until something writes to it) or of a
#    device is refused at once; a device on the command line is read up to
#    the 64 MiB limit.  A statement's output to a FIFO that no process
#    reads is refused at once too (it waited for a reader for ever).
#  * `linearize` of 300 uncoupled particles takes its 600 directions in
#    blocks (EOM_TANGENT_BUDGET): it runs in 160 MB of address space,
#    where one pass took 230 MB; with less memory, nh says "out of
#    memory" before it aborts (it aborted without a word).  Skipped under
#    AddressSanitizer, as above.
#  * An endless line is cut at 65 536 bytes with the error, at once.
#  * A statement read a line at a time is limited to 1 MiB.
set -u
: "${NH:?NH must name the nh binary}"
tmp=$(mktemp -d)
pid=
trap '[ -n "$pid" ] && kill "$pid" 2>/dev/null; rm -rf "$tmp"' EXIT
cd "$tmp" || exit 1
fail=0

# check NAME STATUS PATTERN: the last command's status and stderr (in err)
check() {
    if [ "$st" != "$2" ] || ! grep -q -- "$3" err; then
        echo "FAIL: $1: status $st (want $2), stderr:"
        head -c 2000 err
        echo "  (want a line matching: $3)"
        fail=1
    fi
}

# Memory follows the model, not the lines.
if ldd "$NH" 2>/dev/null | grep -q libasan; then
    echo "address-space check skipped: AddressSanitizer build"
else
    yes 'print 1' | head -n 400000 > many.nh
    for mode in "-" ""; do
        (ulimit -v 65536 && exec "$NH" -q $mode < many.nh) > out 2> err
        st=$?
        lines=$(wc -l < out)
        if [ $st != 0 ] || [ "$lines" != 400000 ]; then
            echo "FAIL: 400000 statements (nh -q $mode) in 64 MB: status $st, $lines lines"
            head -c 500 err
            fail=1
        fi
    done
fi

# linearize in blocks; out of memory said.
if ! ldd "$NH" 2>/dev/null | grep -q libasan; then
    awk 'BEGIN {
        print "param m = 2"
        for (i = 0; i < 300; i++) print "coord x" i
        for (i = 0; i < 300; i++) print "particle P" i " mass m at [x" i ", 0]"
        for (i = 0; i < 300; i++) print "force x" i " = -" i + 1 "*x" i
        print "equations lagrange"
        print "linearize"
    }' > particles.nh
    (ulimit -v 160000 && exec "$NH" -q particles.nh) > out 2> err
    st=$?
    # A = [0 I; -K/m 0], K = diag(1 ... 300): the last row -150 at x299
    rows=$(grep -c '^\[' out)
    last=$(tail -n 1 out | tr -d '[]' | awk -F', ' '{
        bad = NF != 600; for (i = 1; i <= NF; i++) if ($i != (i == 300 ? -150 : 0)) bad = 1
        print bad ? "wrong" : "right" }')
    if [ $st != 0 ] || [ "$rows" != 600 ] || [ "$last" != right ]; then
        echo "FAIL: linearize of 300 particles in 160 MB: status $st, $rows rows, the last $last"
        head -c 300 err
        fail=1
    fi
    for lim in 30000 60000; do
        (ulimit -v $lim && exec "$NH" -q particles.nh) > out 2> err
        st=$?
        check "linearize of 300 particles in $lim kB" 134 "^nh: out of memory\$"
    done
fi

# `nh -` runs statements as they come.
mkfifo in
"$NH" -q - < in > out 2> err &
pid=$!
exec 3> in
echo 'print 42' >&3
k=0
while ! grep -q '^42 = 42$' out && [ $k -lt 100 ]; do
    sleep 0.1
    k=$((k + 1))
done
if ! grep -q '^42 = 42$' out; then
    echo "FAIL: nh - did not run a statement before its input ended"
    fail=1
fi
echo 'quit' >&3
exec 3>&-
wait "$pid"
pid=

# FIFOs and devices.
mkfifo fifo.nh
timeout 20 "$NH" -q -e 'load "fifo.nh"' > out 2> err
st=$?
check "load of a FIFO" 1 "^<-e>:1:6: error: 'fifo.nh' is not a regular file: load and import read files, not FIFOs or devices\$"
mkfifo out.fifo
timeout 20 "$NH" -q -e 'print 1 > "out.fifo"' > out 2> err
st=$?
check "print to a FIFO without a reader" 1 "^<-e>:1:11: error: cannot write 'out.fifo': it is a FIFO that no process reads (nh does not wait for one)\$"
timeout 20 "$NH" -q -e 'load "/dev/zero"' > out 2> err
st=$?
check "load of a device" 1 "'/dev/zero' is not a regular file"
timeout 60 "$NH" -q /dev/zero > out 2> err
st=$?
check "a device on the command line" 1 "^nh: error: '/dev/zero' is larger than 64 MiB\$"

# An endless line: cut at the limit, reported at once.
yes | tr -d '\n' | timeout 60 "$NH" -q - > out 2> err
st=$?
check "an endless line from nh -" 1 "^<stdin>:1:65537: error: line longer than 65536 bytes\$"
# the REPL reports it and skips the rest of the line (50 MB of it)
{ yes | tr -d '\n' | head -c 50000000; printf '\nprint 7\n'; } |
    timeout 60 "$NH" -q > out 2> err
st=$?
check "a long line in the REPL" 1 "^<repl>:1:65537: error: line longer than 65536 bytes\$"
grep -q '^7 = 7$' out || { echo "FAIL: the REPL did not go on"; fail=1; }

# A statement longer than 1 MiB read a line at a time.
{
    echo 'print [0,'
    k=0
    while [ $k -lt 20 ]; do
        yes '1,' | head -n 30000 | tr -d '\n'
        echo
        k=$((k + 1))
    done
    echo '0]'
} > long.nh
timeout 60 "$NH" -q - < long.nh > out 2> err
st=$?
check "a statement of 1.2 MB" 1 "^<stdin>:1:1: error: a statement longer than 1 MiB: put it in a file and \`load\` it, or split it with \`let\`\$"

[ $fail = 0 ] && echo "input limits: all hold"
exit $fail
