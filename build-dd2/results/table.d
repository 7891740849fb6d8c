build-dd2/results/table.o: results/table.c results/table.h core/status.h \
 core/fileio.h
results/table.h:
core/status.h:
core/fileio.h:
