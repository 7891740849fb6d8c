/* ctq command registry: the one table of commands, read by main (dispatch,
 * `ctq help`) and by `ctq run` (which commands a plan step may run, and
 * how each takes its output location). */
#include "harness/commands.h"

#include <string.h>

const struct ctq_command ctq_commands[] = {
	{"inspect", ctq_cmd_inspect,
	 "show what each module executes as: scheme, group, target, rule", true, CTQ_CMD_OUT_NONE},
	{"conform", ctq_cmd_conform,
	 "run conformance suites (JSON cases) and write CSV + JUnit", true, CTQ_CMD_OUT_OPTION},
	{"generate", ctq_cmd_generate,
	 "greedy text from a checkpoint (tokenizer, runner, backend) for a human check", true,
	 CTQ_CMD_OUT_NONE},
	{"bench", ctq_cmd_bench,
	 "benchmarks: `bench model` (TTFT, prefill and decode throughput), `bench serve` (load),\n"
	 "               `bench gemm` (W8A8 GEMM TOPS against M vs cuBLAS)", true, CTQ_CMD_OUT_OPTION},
	{"probe", ctq_cmd_probe,
	 "isolate the W8A8 kernels per layer geometry: NaN/Inf, rel-L2 vs references", true,
	 CTQ_CMD_OUT_OPTION},
	{"make-model", ctq_cmd_make_model,
	 "write a synthetic BF16 checkpoint (qwen3, qwen2, llama shapes)", true, CTQ_CMD_OUT_NONE},
	{"quantize", ctq_cmd_quantize,
	 "turn a BF16 checkpoint into a compressed-tensors W8A8 INT8 one", true, CTQ_CMD_OUT_NONE},
	{"verify-weights", ctq_cmd_verify_weights,
	 "dequantize every quantized module and hold it against the source checkpoint", true,
	 CTQ_CMD_OUT_OPTION},
	{"import-gguf", ctq_cmd_import_gguf,
	 "convert a llama GGUF (F32/F16/Q8_0/Q4_0/Q4_1) into a Hugging Face BF16 checkpoint", true,
	 CTQ_CMD_OUT_NONE},
	{"eval", ctq_cmd_eval,
	 "MMLU / C-Eval / CMMLU accuracy by answer log-probabilities; paired verdict vs a baseline;\n"
	 "               `eval kld` (token KL divergence and top-1 agreement vs a reference model)", true,
	 CTQ_CMD_OUT_OPTION},
	{"run", ctq_cmd_run,
	 "run a plan of steps (plans/default.json) into one run directory with a report", false,
	 CTQ_CMD_OUT_NONE},
	{"report", ctq_cmd_report,
	 "write summary.md and a self-contained report.html (plots) for a run directory", false,
	 CTQ_CMD_OUT_NONE},
	{"compare", ctq_cmd_compare,
	 "regression verdict between two run directories, or a trend over N (--trend)", true,
	 CTQ_CMD_OUT_OPTION},
	{"serve", ctq_cmd_serve,
	 "OpenAI-compatible HTTP server (completions, chat, streaming) until SIGINT / SIGTERM", false,
	 CTQ_CMD_OUT_NONE},
};

const size_t ctq_n_commands = sizeof ctq_commands / sizeof *ctq_commands;

const struct ctq_command *ctq_command_find(const char *name)
{
	for (size_t i = 0; i < ctq_n_commands; i++)
		if (!strcmp(name, ctq_commands[i].name))
			return &ctq_commands[i];
	return NULL;
}
