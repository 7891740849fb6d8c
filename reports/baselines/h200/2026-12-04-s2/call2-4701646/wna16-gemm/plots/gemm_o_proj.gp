# ctq plot gemm_o_proj: gnuplot gemm_o_proj.gp (in this folder) redraws gemm_o_proj.png from gemm_o_proj.dat
set terminal pngcairo size 900,520 font "sans,10" noenhanced
set output "gemm_o_proj.png"
set datafile missing "NaN"
set grid ytics lc rgb "#dddddd"
set border lc rgb "#555555"
set key noenhanced
set title "o_proj (K=4096, N=2560): TOPS against M"
set logscale x 2
set grid
set key top left font ",9"
set xlabel "M (tokens)"
set ylabel "TOPS (2MNK / median time)"
set yrange [0:*]
set offsets 0, 0, graph 0.06, 0
plot "gemm_o_proj.dat" index 0 using 1:2 with linespoints pt 7 title "ctq_gemm", "gemm_o_proj.dat" index 1 using 1:2 with linespoints pt 7 title "ctq_w8a8", "gemm_o_proj.dat" index 2 using 1:2 with linespoints pt 7 title "cublas_bf16", "gemm_o_proj.dat" index 3 using 1:2 with linespoints pt 7 title "cublaslt_i8", 1979 with lines dt 2 lc rgb "#888888" title "INT8 dense peak 1979 TOPS"
