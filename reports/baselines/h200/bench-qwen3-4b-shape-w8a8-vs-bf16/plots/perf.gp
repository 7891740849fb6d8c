# ctq plot perf: gnuplot perf.gp (in this folder) redraws perf.png from perf.dat
set terminal pngcairo size 1000,900 font "sans,10" noenhanced
set output "perf.png"
set datafile missing "NaN"
set grid ytics lc rgb "#dddddd"
set border lc rgb "#555555"
set key noenhanced
set multiplot layout 2,1
set style fill solid 0.8 border -1
set boxwidth 0.6
set xtics rotate by 30 right font ",8"
set offsets 0.5, 0.5, 0, 0
set bmargin 9
set lmargin 22
set logscale y
set title "time to first token (median, min-max bars)"
set ylabel "TTFT ms"
plot "perf.dat" using 1:3:4:5:(0.6):xtic(2) with boxerrorbars lc rgb "#1f77b4" notitle
set title "throughput (median)"
set ylabel "tokens/s"
set boxwidth 0.35
set key tmargin horizontal center
plot "perf.dat" using ($1-0.18):6:xtic(2) with boxes lc rgb "#2ca02c" title "prefill tok/s", "perf.dat" using ($1+0.18):8 with boxes lc rgb "#ff7f0e" title "decode tok/s"
unset multiplot
