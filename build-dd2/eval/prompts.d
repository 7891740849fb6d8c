build-dd2/eval/prompts.o: eval/prompts.c eval/prompts.h core/strbuf.h \
 eval/datasets.h core/arena.h core/status.h
eval/prompts.h:
core/strbuf.h:
eval/datasets.h:
core/arena.h:
core/status.h:
