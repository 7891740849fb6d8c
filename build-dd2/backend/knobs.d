build-dd2/backend/knobs.o: backend/knobs.c backend/knobs.h core/status.h
backend/knobs.h:
core/status.h:
