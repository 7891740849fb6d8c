build-dd2/checkpoint/synth.o: checkpoint/synth.c checkpoint/synth.h \
 core/dtype.h core/status.h checkpoint/safetensors.h core/arena.h \
 core/fileio.h core/json_write.h core/strbuf.h core/rng.h
checkpoint/synth.h:
core/dtype.h:
core/status.h:
checkpoint/safetensors.h:
core/arena.h:
core/fileio.h:
core/json_write.h:
core/strbuf.h:
core/rng.h:
