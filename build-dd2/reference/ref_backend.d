build-dd2/reference/ref_backend.o: reference/ref_backend.c \
 backend/backend.h core/status.h core/arena.h core/dtype.h \
 core/numerics.h reference/ref_model_ops.h reference/ref_ops.h
backend/backend.h:
core/status.h:
core/arena.h:
core/dtype.h:
core/numerics.h:
reference/ref_model_ops.h:
reference/ref_ops.h:
