build-dd2/eval/datasets.o: eval/datasets.c eval/datasets.h core/arena.h \
 core/status.h core/fileio.h core/strbuf.h
eval/datasets.h:
core/arena.h:
core/status.h:
core/fileio.h:
core/strbuf.h:
