build-dd2/conform/probe.o: conform/probe.c conform/probe.h core/status.h \
 backend/backend.h core/arena.h core/dtype.h core/json.h core/rng.h \
 reference/ref_ops.h core/numerics.h
conform/probe.h:
core/status.h:
backend/backend.h:
core/arena.h:
core/dtype.h:
core/json.h:
core/rng.h:
reference/ref_ops.h:
core/numerics.h:
