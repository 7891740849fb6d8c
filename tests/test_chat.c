/* Chat templates, one home (serve/chat.h) for ctq serve and ctq generate
 * --chat: the tokenizer fixture ctq ships for trying chat carries a
 * template; the loader takes a tokenizer folder or its tokenizer.json;
 * generate --chat renders with the model's template or says why not. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "serve/chat.h"
#include "tests/command.h"

#define QWEN2_FIXTURE "tests/fixtures/tokenizers/qwen2"

/* The committed config tools/fixtures-tokenizers.sh puts beside the Qwen2
 * tokenizer: Qwen2-Instruct's ChatML template, recognized and rendered as
 * transformers' apply_chat_template(add_generation_prompt=True) does. */
Test(chat, the_qwen2_fixture_carries_a_chatml_template)
{
	struct ctq_chat_template t;
	struct ctq_error err = {0};
	cr_assert_eq(ctq_chat_template_load(&t, QWEN2_FIXTURE, &err), CTQ_OK, "%s", err.message);
	cr_expect_eq(t.family, CTQ_CHAT_CHATML, "%s", t.why);
	cr_expect(t.generation_prompt);
	cr_expect_str_eq(t.default_system, "You are a helpful assistant.");
	const struct ctq_chat_message m = {"user", "Hi"};
	struct ctq_strbuf sb;
	ctq_strbuf_init(&sb);
	cr_assert_eq(ctq_chat_render(&t, &m, 1, &sb, &err), CTQ_OK, "%s", err.message);
	cr_expect_str_eq(ctq_strbuf_str(&sb), "<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n"
					      "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n");
	ctq_strbuf_free(&sb);
}

/* A tokenizer given as its tokenizer.json file: the config in its folder. */
Test(chat, a_tokenizer_file_reads_its_folders_config)
{
	char dir[] = "/tmp/ctq-test-chat-XXXXXX", cmd[600], file[128];
	cr_assert(mkdtemp(dir));
	snprintf(cmd, sizeof cmd,
		 "cp tests/fixtures/tokenizers/gpt2-small/tokenizer.json " QWEN2_FIXTURE "/tokenizer_config.json %s/",
		 dir);
	cr_assert_eq(system(cmd), 0);
	snprintf(file, sizeof file, "%s/tokenizer.json", dir);
	struct ctq_chat_template t;
	struct ctq_error err = {0};
	cr_assert_eq(ctq_chat_template_load(&t, file, &err), CTQ_OK, "%s", err.message);
	cr_expect_eq(t.family, CTQ_CHAT_CHATML, "%s", t.why);
	cr_assert_eq(ctq_chat_template_load(&t, "tests/fixtures/tokenizers/gpt2-small/tokenizer.json", &err),
		     CTQ_OK, "%s", err.message);
	cr_expect_eq(t.family, CTQ_CHAT_NONE);
	snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
	cr_expect_eq(system(cmd), 0);
}

/* Runs a shell command line; its exit status, stderr in err (cap bytes). */
static int run(const char *cmd, char *err, size_t cap)
{
	char full[2048];
	snprintf(full, sizeof full, "%s 2>/tmp/ctq-test-chat-err.txt >/dev/null", cmd);
	int rc = system(full);
	FILE *f = fopen("/tmp/ctq-test-chat-err.txt", "r");
	size_t n = f ? fread(err, 1, cap - 1, f) : 0;
	err[n] = '\0';
	if (f)
		fclose(f);
	return WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
}

/* generate --chat renders the model's template (not a hard-coded ChatML):
 * with a tokenizer whose folder has none it is a usage error that says so;
 * with one it runs, and the rendered turn is longer than the bare prompt. */
Test(chat, generate_chat_uses_the_models_template, .timeout = 120)
{
	char dir[] = "/tmp/ctq-test-chat-XXXXXX", cmd[1600], err[4096];
	cr_assert(mkdtemp(dir));
	snprintf(cmd, sizeof cmd, "%s make-model --arch qwen3 --preset tiny --vocab 2000 --seed 3 --quiet %s/m",
		 test_ctq_bin(), dir);
	cr_assert_eq(run(cmd, err, sizeof err), 0, "%s", err);
	/* no template beside gpt2-small's tokenizer */
	snprintf(cmd, sizeof cmd, "%s generate --model %s/m --tokenizer tests/fixtures/tokenizers/gpt2-small "
		 "--prompt Hi --chat --backend reference --max-new-tokens 2", test_ctq_bin(), dir);
	cr_expect_eq(run(cmd, err, sizeof err), 2, "%s", err);
	cr_expect(strstr(err, "--chat") && strstr(err, "chat template"), "%s", err);
	/* the same tokenizer with a ChatML template beside it */
	snprintf(cmd, sizeof cmd,
		 "mkdir -p %s/tok && cp tests/fixtures/tokenizers/gpt2-small/tokenizer.json %s/tok/ && "
		 "cp " QWEN2_FIXTURE "/tokenizer_config.json %s/tok/",
		 dir, dir, dir);
	cr_assert_eq(system(cmd), 0);
	char plain[4096];
	snprintf(cmd, sizeof cmd, "%s generate --model %s/m --tokenizer %s/tok --prompt Hi --backend reference "
		 "--max-new-tokens 2", test_ctq_bin(), dir, dir);
	cr_assert_eq(run(cmd, plain, sizeof plain), 0, "%s", plain);
	snprintf(cmd, sizeof cmd, "%s generate --model %s/m --tokenizer %s/tok --prompt Hi --chat "
		 "--backend reference --max-new-tokens 2", test_ctq_bin(), dir, dir);
	cr_assert_eq(run(cmd, err, sizeof err), 0, "%s", err);
	int n_plain = 0, n_chat = 0;
	const char *p = strstr(plain, ": "), *c = strstr(err, ": ");
	cr_assert(p && c, "%s / %s", plain, err);
	cr_assert(sscanf(p + 2, "%d prompt", &n_plain) == 1 && sscanf(c + 2, "%d prompt", &n_chat) == 1,
		  "%s / %s", plain, err);
	cr_expect(n_chat > n_plain + 10, "chat prompt %d tokens, bare %d", n_chat, n_plain);
	snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
	cr_expect_eq(system(cmd), 0);
}
