build-dd2/results/junit.o: results/junit.c results/junit.h core/status.h \
 core/fileio.h core/strbuf.h
results/junit.h:
core/status.h:
core/fileio.h:
core/strbuf.h:
