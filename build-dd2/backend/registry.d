build-dd2/backend/registry.o: backend/registry.c backend/backend.h \
 core/status.h
backend/backend.h:
core/status.h:
