build-dd2/results/files.o: results/files.c results/files.h core/status.h \
 core/fileio.h core/json.h
results/files.h:
core/status.h:
core/fileio.h:
core/json.h:
