build-dd2/families/family.o: families/family.c families/family.h \
 core/status.h core/strbuf.h results/files.h results/plot.h core/fileio.h \
 core/json.h results/table.h
families/family.h:
core/status.h:
core/strbuf.h:
results/files.h:
results/plot.h:
core/fileio.h:
core/json.h:
results/table.h:
