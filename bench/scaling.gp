# scaling.gp — the N-trailer figure of doc/performance.md from the table
# `make bench` prints:
#   make bench | awk '$1 ~ /^(multipliers|maggi)$/ && $2 ~ /^[0-9]+$/' > scaling.dat
#   gnuplot -e "data='scaling.dat'; out='doc/performance_scaling.png'" bench/scaling.gp
# Columns of scaling.dat: method N text->tapes (value unit) eom_prepare
# (value unit) nodes size tape rhs (value unit); size = nodes + children.
if (!exists("data")) data = 'scaling.dat'
if (!exists("out")) out = 'doc/performance_scaling.png'
set terminal pngcairo noenhanced size 900,600 font ",11"
set format y "%.0e"
set output out
set logscale xy
set xlabel "N (trailers)"
set ylabel "seconds / count"
set key left top
set grid
# a time "v unit" in seconds
sec(v, u) = u eq "ns" ? v*1e-9 : u eq "us" ? v*1e-6 : u eq "ms" ? v*1e-3 : v
set title "N-trailer: derivation, graph size, tape length, right-hand side"
plot data using 2:(strcol(1) eq "multipliers" ? sec($3, strcol(4)) : 1/0) w lp t "text->tapes (multipliers)", \
     data using 2:(strcol(1) eq "multipliers" ? sec($5, strcol(6)) : 1/0) w lp t "eom_prepare (multipliers)", \
     data using 2:(strcol(1) eq "maggi" ? sec($5, strcol(6)) : 1/0) w lp t "eom_prepare (maggi)", \
     data using 2:(strcol(1) eq "multipliers" ? sec($10, strcol(11)) : 1/0) w lp t "rhs (multipliers)", \
     data using 2:(strcol(1) eq "maggi" ? sec($10, strcol(11)) : 1/0) w lp t "rhs (maggi)", \
     data using 2:(strcol(1) eq "multipliers" ? $8*1e-7 : 1/0) w lp t "graph size x 1e-7 (multipliers)", \
     data using 2:(strcol(1) eq "maggi" ? $8*1e-7 : 1/0) w lp t "graph size x 1e-7 (maggi)", \
     data using 2:(strcol(1) eq "multipliers" ? $9*1e-6 : 1/0) w lp t "tape length x 1e-6 (multipliers)", \
     data using 2:(strcol(1) eq "multipliers" ? 1e-5*$2**3 : 1/0) w l dt 2 lc rgb "gray" t "N^3", \
     data using 2:(strcol(1) eq "multipliers" ? 1e-6*$2**2 : 1/0) w l dt 3 lc rgb "gray" t "N^2"
