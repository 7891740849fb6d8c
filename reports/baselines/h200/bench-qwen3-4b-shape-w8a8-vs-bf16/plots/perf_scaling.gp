# ctq plot perf_scaling: gnuplot perf_scaling.gp (in this folder) redraws perf_scaling.png from perf_scaling.dat
set terminal pngcairo size 1200,500 font "sans,10" noenhanced
set output "perf_scaling.png"
set datafile missing "NaN"
set grid ytics lc rgb "#dddddd"
set border lc rgb "#555555"
set key noenhanced
set multiplot layout 1,2
set key bottom right font ",8"
set logscale x 2
set grid
set title "TTFT against input length (median)"
set xlabel "input tokens"
set ylabel "TTFT ms"
set logscale y
plot "perf_scaling.dat" index 0 using 1:2 with linespoints pt 7 title "run_cuda_ref_b1_out32", "perf_scaling.dat" index 1 using 1:2 with linespoints pt 7 title "run_cuda_ref_b8_out32", "perf_scaling.dat" index 2 using 1:2 with linespoints pt 7 title "run_cuda_new_b1_out32", "perf_scaling.dat" index 3 using 1:2 with linespoints pt 7 title "run_cuda_new_b8_out32"
unset logscale y
set title "decode throughput against batch (median)"
set xlabel "batch (sequences)"
set ylabel "decode tokens/s"
plot "perf_scaling.dat" index 4 using 1:2 with linespoints pt 7 title "run_cuda_ref_in128_out32", "perf_scaling.dat" index 5 using 1:2 with linespoints pt 7 title "run_cuda_ref_in2048_out32", "perf_scaling.dat" index 6 using 1:2 with linespoints pt 7 title "run_cuda_new_in128_out32", "perf_scaling.dat" index 7 using 1:2 with linespoints pt 7 title "run_cuda_new_in2048_out32"
unset multiplot
