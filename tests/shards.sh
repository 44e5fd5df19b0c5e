#!/bin/sh
# shards.sh — a study on many cores and many machines (LANGUAGE.md §1.2):
# the rows of a sweep are the same bytes with one worker process and with
# several (`set threads`, NH_THREADS), and run as shards under GNU
# parallel (`nh --shard K/N`) and joined (`nh --merge`) they are the one
# run's output, byte for byte, whether the table goes to standard output
# or to a file.  --merge refuses a missing shard, a shard given twice and
# a table cut short, writing nothing.  A sweep that fails at a point
# fails at the same point, with the same rows and message, on workers.
set -u
: "${NH:?NH must name the nh binary}"
command -v parallel >/dev/null 2>&1 || {
    echo "GNU parallel is missing (./bootstrap --tests installs it)"
    exit 1
}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cd "$tmp" || exit 1
fail=0
bad() { echo "FAIL: $*"; fail=1; }

cat > study.nh <<'NH'
param k = 1, c = 0.1
coord x
kinetic T = x'^2/2
potential V = k*x^2/2
force x = -c*x'
sweep k from 1 to 2 step 0.125, c from 0 to 0.3 step 0.1: initial x = 1; simulate to 3 step 1; print x, x'; eigen
NH
sed 's/: initial/ > "rows.csv": initial/' study.nh > tofile.nh

NH_THREADS=1 "$NH" -q study.nh > one.csv 2> one.err || bad "the study failed"
[ "$(wc -l < one.csv)" -eq 37 ] || bad "one run: $(wc -l < one.csv) lines, expected 37"
for n in 2 3 7; do
    NH_THREADS=$n "$NH" -q study.nh > w$n.csv 2> w$n.err || bad "threads $n failed"
    cmp -s one.csv w$n.csv || bad "threads = $n gives other rows than threads = 1"
    cmp -s one.err w$n.err || bad "threads = $n gives other warnings"
done
"$NH" -q -e 'set threads = 4' study.nh > set.csv 2>/dev/null &&
    cmp -s one.csv set.csv || bad "set threads = 4 gives other rows"

parallel -j 4 "NH_THREADS=1 '$NH' -q --shard {}/4 study.nh > shard.{}.csv 2>/dev/null" ::: 1 2 3 4 ||
    bad "a shard failed under GNU parallel"
"$NH" --merge shard.1.csv shard.2.csv shard.3.csv shard.4.csv > merged.csv ||
    bad "the merge failed"
cmp -s one.csv merged.csv || bad "the merged shards differ from the one run"
grep -q '^# nh --shard 2/4: 36 points$' shard.2.csv || bad "shard 2 has no shard line"
[ "$(sed -n 2p shard.2.csv | cut -d, -f1)" = index ] || bad "shard 2 has no index column"

NH_THREADS=1 "$NH" -q tofile.nh 2>/dev/null || bad "the study to a file failed"
parallel -j 2 "'$NH' -q --shard {}/3 tofile.nh 2>/dev/null" ::: 1 2 3 || bad "a shard to a file failed"
[ -f rows.1-of-3.csv ] && [ -f rows.3-of-3.csv ] || bad "the shards' files are not rows.K-of-3.csv"
"$NH" --merge rows.1-of-3.csv rows.2-of-3.csv rows.3-of-3.csv > rows.merged ||
    bad "the merge of the files failed"
cmp -s rows.csv rows.merged || bad "the merged files differ from the one run's file"

"$NH" --merge shard.1.csv shard.2.csv shard.4.csv > out 2> err && bad "a missing shard was merged"
grep -q 'shard 3/4 is missing' err || bad "missing shard: $(cat err)"
[ -s out ] && bad "a refused merge wrote something"
"$NH" --merge shard.1.csv shard.2.csv shard.2.csv shard.4.csv > out 2> err && bad "a shard given twice was merged"
grep -q 'both hold shard 2/4' err || bad "shard twice: $(cat err)"
head -n 5 shard.3.csv > cut.csv
"$NH" --merge shard.1.csv shard.2.csv cut.csv shard.4.csv > out 2> err && bad "a cut table was merged"
grep -q "cut.csv:6: shard 3/4's table has no row for index 14" err || bad "cut table: $(cat err)"
"$NH" --shard 5/4 study.nh > out 2> err; [ $? -eq 2 ] || bad "--shard 5/4 was taken"

# a point that fails: the same rows before it and the same error, at 2, 3
# and 4 workers, whichever process claims it (this one or a forked one)
for at in 13 12; do
    cat > fails.nh <<NH
param a = 1
sweep a from 0 to 20 step 1: print 1/(a - $at)
NH
    NH_THREADS=1 "$NH" -q fails.nh > f1.csv 2> f1.err; s1=$?
    [ "$(wc -l < f1.csv)" -eq $((at + 1)) ] ||
        bad "a failing sweep kept $(wc -l < f1.csv) lines, expected $((at + 1))"
    for n in 2 3 4; do
        NH_THREADS=$n "$NH" -q fails.nh > fn.csv 2> fn.err; sn=$?
        [ $s1 -eq 1 ] && [ $sn -eq 1 ] ||
            bad "exit status $s1 and $sn for a sweep failing at $at"
        cmp -s f1.csv fn.csv ||
            bad "a sweep failing at $at wrote other rows on $n workers"
        cmp -s f1.err fn.err ||
            bad "a sweep failing at $at said otherwise on $n workers: $(cat fn.err)"
    done
done
# compare … samples N draws its random states on workers: each draw
# from its own seed, counted in order, so the same largest difference
# and, where most draws are singular (sqrt of a negative number), the
# same count of usable ones as one worker
cat > compare.nh <<'NH'
coord x, y
speed u, w
kinematic x' = u
kinematic y' = u + w
kinetic T = (x'^2 + y'^2)/2 + x*y*x'*y'/5
potential V = sqrt(x - OFF)*y^2
initial x = 0.1, y = 0.2
compare lagrange maggi samples 300
NH
for off in 0.85 1.02; do
    sed "s/OFF/$off/" compare.nh > c.nh
    NH_THREADS=1 "$NH" -q c.nh > c1.out 2>&1
    grep -q 'max |diff| = \|only [0-9]* of 300 random states' c1.out ||
        bad "compare: $(cat c1.out)"
    for n in 2 3 7; do
        NH_THREADS=$n "$NH" -q c.nh > c$n.out 2>&1
        cmp -s c1.out c$n.out || bad "compare on $n workers: $(cat c$n.out)"
    done
done
grep -q 'only [0-9]* of 300 random states' c1.out ||
    bad "compare: no draws failed ($(cat c1.out))"

# a map of Lyapunov exponents over a grid: lyapunov's columns in a
# sweep, the same bytes on workers, and the row of a point the numbers
# of the statement run alone there
cat > lyap.nh <<'NH'
param k = 1, a = 0.1
coord x, y
kinetic T = (x'^2 + y'^2)/2
potential V = k*(x^2 + y^2)/2 + x^2*y - y^3/3
sweep k from 1 to 2 step 0.5, a from 0.1 to 0.2 step 0.1: initial x = a, y = 0.2, x' = 0.3, y' = 0.1; lyapunov to 20
NH
NH_THREADS=1 "$NH" -q lyap.nh > y1.csv 2>&1 || bad "lyapunov sweep: $(cat y1.csv)"
NH_THREADS=3 "$NH" -q lyap.nh > y3.csv 2>&1
cmp -s y1.csv y3.csv || bad "lyapunov sweep on 3 workers: $(cat y3.csv)"
[ "$(head -n 1 y1.csv)" = "k,a,lyap1,lyap2,lyap3,lyap4,sum,divergence" ] ||
    bad "lyapunov sweep header: $(head -n 1 y1.csv)"
sed -n '/^sweep/d;p' lyap.nh > alone.nh
printf 'set k = 1.5, a = 0.2\ninitial x = 0.2, y = 0.2, x'"'"' = 0.3, y'"'"' = 0.1\nlyapunov to 20\n' >> alone.nh
"$NH" -q alone.nh > alone.out 2>&1 || bad "lyapunov alone: $(cat alone.out)"
want=$(sed -n 's/^lyap[0-9] = //p' alone.out | paste -sd, -)
got=$(grep '^1.5,0.2,' y1.csv | cut -d, -f3-6)
[ -n "$want" ] && [ "$got" = "$want" ] || bad "lyapunov sweep row $got, alone $want"

# a follow's statements at its points run on workers too (the family
# itself is traced in order): the same rows, and the same first failure
cat > follow.nh <<'NH'
param m = 1, l = 1, g = 9.81
coord th, ph
kinetic T = m*l^2/2*(th'^2 + sin(th)^2*ph'^2)
potential V = -m*g*l*cos(th)
steady th = 0.5, ph' ~ 4
follow th from 0.5 to 1.4 step 0.05: steady ph' ~ 4; eigen; print ph'^2*cos(th)
follow th from 0.5 to 1.4 step 0.05: steady ph' ~ 4; eigen; print sqrt(1 - th)
NH
NH_THREADS=1 "$NH" -q follow.nh > g1.csv 2> g1.err; s1=$?
NH_THREADS=3 "$NH" -q follow.nh > g3.csv 2> g3.err; s3=$?
[ $s1 -eq 1 ] && [ $s3 -eq 1 ] || bad "exit status $s1 and $s3 for the follows"
cmp -s g1.csv g3.csv || bad "a follow wrote other rows on 3 workers"
cmp -s g1.err g3.err || bad "a follow failed otherwise on 3 workers: $(cat g3.err)"
grep -q 'error: at th = 1.01' g1.err || bad "the failing follow: $(cat g1.err)"
exit $fail
