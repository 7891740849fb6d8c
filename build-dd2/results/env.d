build-dd2/results/env.o: results/env.c results/env.h core/status.h \
 backend/knobs.h core/json.h core/json_write.h core/strbuf.h \
 core/sha256.h
results/env.h:
core/status.h:
backend/knobs.h:
core/json.h:
core/json_write.h:
core/strbuf.h:
core/sha256.h:
