build-dd2/results/plot.o: results/plot.c results/plot.h core/status.h \
 core/strbuf.h core/fileio.h
results/plot.h:
core/status.h:
core/strbuf.h:
core/fileio.h:
