build-dd2/results/run.o: results/run.c results/run.h core/status.h \
 core/fileio.h core/json.h core/version.h
results/run.h:
core/status.h:
core/fileio.h:
core/json.h:
core/version.h:
