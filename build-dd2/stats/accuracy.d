build-dd2/stats/accuracy.o: stats/accuracy.c stats/accuracy.h
stats/accuracy.h:
