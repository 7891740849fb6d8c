# ctq plot perf_scaling: gnuplot perf_scaling.gp (in this folder) redraws perf_scaling.png from perf_scaling.dat
set terminal pngcairo size 700,500 font "sans,10" noenhanced
set output "perf_scaling.png"
set datafile missing "NaN"
set grid ytics lc rgb "#dddddd"
set border lc rgb "#555555"
set key noenhanced
set multiplot layout 1,1
set key bottom right font ",8"
set logscale x 2
set grid
set title "TTFT against input length (median)"
set xlabel "input tokens"
set ylabel "TTFT ms"
set logscale y
plot "perf_scaling.dat" index 0 using 1:2 with linespoints pt 7 title "run_cuda_b1_out64"
unset logscale y
unset multiplot
