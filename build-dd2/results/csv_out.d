build-dd2/results/csv_out.o: results/csv_out.c results/csv_out.h \
 core/status.h
results/csv_out.h:
core/status.h:
