build-dd2/text/nfc.o: text/nfc.c text/tokenizer.h core/status.h \
 core/arena.h core/utf8.h text/nfc_data.h
text/tokenizer.h:
core/status.h:
core/arena.h:
core/utf8.h:
text/nfc_data.h:
