build-dd2/reference/ref_ops.o: reference/ref_ops.c reference/ref_ops.h \
 core/numerics.h core/dtype.h core/status.h
reference/ref_ops.h:
core/numerics.h:
core/dtype.h:
core/status.h:
