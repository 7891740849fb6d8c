build-dd2/stats/sample.o: stats/sample.c stats/sample.h core/status.h
stats/sample.h:
core/status.h:
