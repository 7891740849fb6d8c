build-dd2/reference/ref_model_ops.o: reference/ref_model_ops.c \
 reference/ref_model_ops.h backend/backend.h core/status.h core/arena.h \
 core/dtype.h reference/ref_ops.h core/numerics.h
reference/ref_model_ops.h:
backend/backend.h:
core/status.h:
core/arena.h:
core/dtype.h:
reference/ref_ops.h:
core/numerics.h:
