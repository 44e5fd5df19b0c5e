#!/bin/sh
# to_file.sh — LANGUAGE.md §7: every statement that prints takes `> "file"`
# at its end and writes there instead of standard output; a failed write
# is an error and leaves an existing file as it was.
#
# Each printing statement runs twice on one model: plainly, and with
# `> "out.txt"`; the file must hold exactly what standard output got the
# first time, and standard output nothing.  Then the failures: a statement
# that fails half-way, a folder that does not exist, a file-size limit
# (ulimit -f: write(2) fails with EFBIG as on a full disk), /dev/full;
# each must leave the old file whole and no temporary file behind.
set -u
: "${NH:?NH must name the nh binary}"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cd "$tmp" || exit 1
fail=0

cat > model.nh <<'EOF'
param m = 1, R = 1
coord phi, theta, psi, x, y
kinetic T = m/2*(x'^2 + y'^2) + m*R^2/5*(phi'^2 + theta'^2 + psi'^2 + 2*phi'*psi'*cos(theta))
constraint roll_x: x' = R*theta'*sin(phi) - R*psi'*sin(theta)*cos(phi)
constraint roll_y: y' = -R*theta'*cos(phi) - R*psi'*sin(theta)*sin(phi)
initial theta = 1, phi' = 0.7, theta' = 0.3, psi' = 1.1
equations voronec
simulate to 1 step 0.25
EOF

# Only these may be in the folder: no temporary file stays.
only() {
    got=$(ls -A | sort | tr '\n' ' ')
    if [ "$got" != "$1" ]; then
        echo "FAIL: after $2 the folder holds: $got (want: $1)"
        fail=1
    fi
}

while IFS= read -r stmt; do
    "$NH" -q model.nh -e "$stmt" > want 2> err || {
        echo "FAIL: $stmt"; cat err; fail=1; continue;
    }
    [ -s want ] || { echo "FAIL: $stmt printed nothing"; fail=1; }
    "$NH" -q model.nh -e "$stmt > \"out.txt\"" > got 2> err || {
        echo "FAIL: $stmt > \"out.txt\""; cat err; fail=1; continue;
    }
    if [ -s got ] || ! cmp -s want out.txt; then
        echo "FAIL: $stmt > \"out.txt\" wrote elsewhere or otherwise:"
        diff want out.txt | head -5
        fail=1
    fi
    only "err got model.nh out.txt want " "$stmt"
    rm -f out.txt
done <<'EOF'
print x', y', T
accel
show latex eom
show voronec
show model
check
compare voronec naive
compare voronec multipliers samples 5
worksheet second
help
help plot
table t, x, y
EOF

# A statement that fails half-way: the old file stays, whole.
printf 'old\n' > out.txt
"$NH" -q model.nh -e 'print x, nope > "out.txt"' > got 2> err
status=$?
if [ $status != 1 ] || [ "$(cat out.txt)" != old ] || [ -s got ] ||
   ! grep -q "^<-e>:1:10: error: unknown name 'nope'" err; then
    echo "FAIL: a failing print replaced the file (status $status)"
    cat err; fail=1
fi
"$NH" -q -e 'coord x; kinetic T = x^2; table 1/x > "out.txt"' > got 2> err
if [ "$(cat out.txt)" != old ] || ! grep -q 'no samples recorded' err; then
    echo "FAIL: a failing table replaced the file"; cat err; fail=1
fi
only "err got model.nh out.txt want " "failing statements"

# A folder that does not exist: the error is at the file's name.
"$NH" -q -e 'show latex t^2 > "no_such_dir/a.tex"' > got 2> err
if [ $? != 1 ] || ! grep -q "^<-e>:1:18: error: cannot write 'no_such_dir/a.tex': No such file or directory\$" err; then
    echo "FAIL: an unwritable file"; cat err; fail=1
fi

# A write that fails (EFBIG past the file-size limit, 1 block: 512 or
# 1024 bytes; the worksheet is 10 kB): the old file stays.
big='worksheet second > "out.txt"'
(ulimit -f 1 && trap '' XFSZ && exec "$NH" -q model.nh -e "$big") > got 2> err
status=$?
if [ $status != 1 ] || [ "$(cat out.txt)" != old ] ||
   ! grep -q "^<-e>:1:20: error: cannot write 'out.txt': File too large\$" err; then
    echo "FAIL: a write past the file-size limit (status $status)"
    cat err; fail=1
fi
only "err got model.nh out.txt want " "a failed write"

# A device is written as it is, and its errors are errors.
if [ -c /dev/full ]; then
    "$NH" -q -e 'print 1 > "/dev/full"' > got 2> err
    if [ $? != 1 ] || ! grep -q "cannot write '/dev/full': No space left on device" err; then
        echo "FAIL: print to /dev/full"; cat err; fail=1
    fi
fi
"$NH" -q -e 'print 1 > "/dev/null"' > got 2> err || {
    echo "FAIL: print to /dev/null"; cat err; fail=1;
}

# A replaced file keeps its mode.
chmod 640 out.txt
"$NH" -q -e 'print 1 > "out.txt"' 2> err || { cat err; fail=1; }
[ "$(cat out.txt)" = "1 = 1" ] || { echo "FAIL: not replaced"; fail=1; }
case $(ls -l out.txt) in
-rw-r-----*) ;;
*) echo "FAIL: the mode changed: $(ls -l out.txt)"; fail=1 ;;
esac

[ $fail = 0 ] && echo "to_file: every printing statement writes to its file"
exit $fail
