build-dd2/results/junit_merge.o: results/junit_merge.c \
 results/junit_merge.h core/status.h results/junit.h core/fileio.h \
 core/strbuf.h results/table.h
results/junit_merge.h:
core/status.h:
results/junit.h:
core/fileio.h:
core/strbuf.h:
results/table.h:
