#!/usr/bin/env python3
"""make test-interop: ctq against other OpenAI-compatible engines, and other
clients against ctq serve. A test driver only (never in ctq's product path).

  1. makes the tiny synthetic Qwen3 (`ctq make-model`, vocab 2048) with the
     llama3-small tokenizer fixture (a Llama-3 chat template), and its W8A8;
  2. starts `ctq serve` on the W8A8 and runs the `openai` Python client's
     completions, chat and their streams against it, `ctq bench serve --url`,
     `ctq eval mmlu --url` (its scores compared with the in-process `ctq
     eval`) and lm-eval's `local-completions` on a small MMLU subset (its
     log-likelihoods compared with `ctq eval --protocol lm-eval` in process);
  3. starts `transformers serve` on the BF16 checkpoint and llama-cpp-python's
     server on a GGUF of it (llama.cpp's own convert_hf_to_gguf.py from the
     llama-cpp-python sdist) and runs `ctq bench serve --url` and `ctq eval
     mmlu --url` against each.
Writes the matrix (engine x command: works / refused with its reason /
FAILED) to OUT/matrix.md and OUT/matrix.json; exit 1 when a cell is neither
working nor refused with a clear reason. Every step has a time limit."""

import argparse
import csv
import glob
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tarfile
import time
import urllib.error
import urllib.request

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
LLAMA_CPP_PYTHON = "0.3.36"
SUBJECTS = ["abstract_algebra", "anatomy", "astronomy"]
LIMIT = 4  # questions per subject
TOL = 1e-3  # |logprob| agreement with the in-process scores, nats


class Matrix:
    def __init__(self):
        self.cells = []

    def add(self, engine, command, state, detail):
        detail = " ".join(str(detail).split())[:400]
        self.cells.append({"engine": engine, "command": command, "state": state, "detail": detail})
        print(f"interop: {engine} | {command}: {state}: {detail}", flush=True)

    def write(self, out):
        with open(os.path.join(out, "matrix.json"), "w") as f:
            json.dump(self.cells, f, indent=1)
        with open(os.path.join(out, "matrix.md"), "w") as f:
            f.write("| engine | command | result | detail |\n| --- | --- | --- | --- |\n")
            for c in self.cells:
                d = c["detail"].replace("|", "\\|")
                f.write(f"| {c['engine']} | {c['command']} | {c['state']} | {d} |\n")

    def ok(self):
        return all(c["state"] in ("works", "refused") for c in self.cells)


def run(cmd, timeout, env=None, cwd=None):
    """(rc, stdout, stderr); rc 124 on the time limit."""
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env, cwd=cwd)
        return p.returncode, p.stdout, p.stderr
    except subprocess.TimeoutExpired as e:
        return 124, e.stdout or "", (e.stderr or "") + f"\n(time limit of {timeout} s)"


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


class Server:
    """A server process in its own process group, stopped by its id."""

    def __init__(self, name, cmd, port, log, env=None, ready_path="/v1/models", ready_s=300):
        self.name = name
        self.log = open(log, "w")
        self.p = subprocess.Popen(cmd, stdout=self.log, stderr=subprocess.STDOUT, env=env, start_new_session=True)
        self.base = f"http://127.0.0.1:{port}/v1"
        self.ready = False
        t0 = time.time()
        while time.time() - t0 < ready_s and self.p.poll() is None:
            try:
                urllib.request.urlopen(f"http://127.0.0.1:{port}{ready_path}", timeout=2).read()
                self.ready = True
                break
            except urllib.error.HTTPError:  # it answers (an error is an answer)
                self.ready = True
                break
            except Exception:
                time.sleep(0.5)

    def stop(self):
        if self.p.poll() is None:
            os.killpg(self.p.pid, signal.SIGTERM)
            try:
                self.p.wait(20)
            except subprocess.TimeoutExpired:
                os.killpg(self.p.pid, signal.SIGKILL)
                self.p.wait()
        self.log.close()


def last_line(text):
    lines = [l for l in text.strip().splitlines() if l.strip()]
    return lines[-1] if lines else ""


def ctq_cell(m, engine, command, rc, out, err, note=""):
    """works on exit 0; refused on exit 2 / 3 with ctq's one-line reason."""
    if rc == 0:
        m.add(engine, command, "works", note or last_line(out))
    elif rc in (2, 3) and last_line(err).startswith("ctq "):
        m.add(engine, command, "refused", f"exit {rc}: {last_line(err)}")
    else:
        m.add(engine, command, "FAILED", f"exit {rc}: {last_line(err) or last_line(out)}")


def read_scores(run_dir):
    """{(subject, id): [logprob_A..D]} of eval_questions.csv."""
    with open(os.path.join(run_dir, "eval_questions.csv")) as f:
        return {(r["subject"], r["id"]): [float(r["logprob_" + k]) for k in "ABCD"] for r in csv.DictReader(f)}


def compare(a, b):
    """Largest |difference| over the questions of a (all must be in b)."""
    worst = 0.0
    for k, v in a.items():
        if k not in b:
            return float("inf")
        worst = max(worst, max(abs(x - y) for x, y in zip(v, b[k])))
    return worst


def bench_serve(m, a, engine, base, tok, model=None):
    out = os.path.join(a.out, f"bench-{engine.split()[0]}")
    cmd = [a.ctq, "bench", "serve", "--url", base, "--tokenizer", tok, "--requests", "8", "--concurrency", "2",
           "--input-len", "32", "--output-len", "16", "--request-timeout", "120", "--out", out, "--force"]
    if model:
        cmd += ["--model", model]
    rc, so, se = run(cmd, 600)
    note = ""
    if rc == 0:
        sv = json.load(open(os.path.join(out, "manifest.json")))["bench_serve"]
        note = (f"profile {sv['server_profile']} ({sv['prompt_format']} prompts"
                f"{', ignore_eos' if sv['ignore_eos'] else ''}), {sv['completed']:.0f}/8 served, "
                f"{sv['stopped_early']:.0f} stopped early, output tokens from {sv['output_tokens_from']}"
                + (f"; probe: {sv['probe']}" if sv["probe"] else ""))
    ctq_cell(m, engine, "ctq bench serve --url", rc, so, se, note)


def eval_url(m, a, engine, base, tok, served, ref_dir, bos_ref_dir=None):
    out = os.path.join(a.out, f"eval-{engine.split()[0]}")
    cmd = [a.ctq, "eval", "mmlu", "--url", base, "--tokenizer", tok, "--served-name", served, "--data", a.mmlu,
           "--subjects", ",".join(SUBJECTS), "--limit", str(LIMIT), "--shots", "0", "--concurrency", "2",
           "--request-timeout", "120", "--out", out, "--force"]
    rc, so, se = run(cmd, 900)
    note = ""
    if rc == 0:
        d = compare(read_scores(out), read_scores(ref_dir))
        learned = [l.strip() for l in so.splitlines() if "refuses" in l]
        note = f"max |logprob - in process| {d:.3g} nats"
        if bos_ref_dir:
            note += f" ({compare(read_scores(out), read_scores(bos_ref_dir)):.3g} against in process with --add-bos)"
        note += f"; {learned[0]}" if learned else ""
        if engine.startswith("ctq") and not d <= TOL:
            m.add(engine, "ctq eval --url", "FAILED", f"scores disagree with the in-process eval: {note}")
            return
    ctq_cell(m, engine, "ctq eval --url", rc, so, se, note)


def in_process_eval(a, model, tok, name, protocol="original", extra=()):
    out = os.path.join(a.out, f"eval-inprocess-{name}")
    rc, so, se = run([a.ctq, "eval", "mmlu", "--model", model, "--tokenizer", tok, "--backend", "reference",
                      "--data", a.mmlu, "--subjects", ",".join(SUBJECTS), "--limit", str(LIMIT), "--shots", "0",
                      "--protocol", protocol, "--out", out, "--force", *extra], 600)
    if rc:
        sys.exit(f"interop: the in-process ctq eval of {model} failed (exit {rc}): {last_line(se)}")
    return out


def openai_client(m, base, model):
    from openai import OpenAI

    c = OpenAI(base_url=base, api_key="none", timeout=60, max_retries=0)
    checks = [
        ("openai completions", lambda: c.completions.create(model=model, prompt="The sky is", max_tokens=8,
                                                            temperature=0).choices[0].text),
        ("openai completions stream", lambda: "".join(
            ch.choices[0].text for ch in c.completions.create(model=model, prompt="The sky is", max_tokens=8,
                                                              temperature=0, stream=True) if ch.choices)),
        ("openai chat", lambda: c.chat.completions.create(
            model=model, messages=[{"role": "user", "content": "Hi"}], max_tokens=8,
            temperature=0).choices[0].message.content),
        ("openai chat stream", lambda: "".join(
            ch.choices[0].delta.content or "" for ch in c.chat.completions.create(
                model=model, messages=[{"role": "user", "content": "Hi"}], max_tokens=8, temperature=0,
                stream=True) if ch.choices)),
    ]
    for name, fn in checks:
        try:
            text = fn()
            m.add("ctq serve", name, "works" if isinstance(text, str) else "FAILED", f"text {text!r}")
        except Exception as e:
            m.add("ctq serve", name, "FAILED", f"{type(e).__name__}: {e}")


def lm_eval(m, a, base, model, tok, ref_dir):
    """lm-eval local-completions on the same questions, one task per subject
    (lm-eval's mmlu prompt: its description, the question, A-D, Answer:)."""
    tasks = os.path.join(a.out, "lm-eval-tasks")
    os.makedirs(tasks, exist_ok=True)
    names = []
    for s in SUBJECTS:
        # The first LIMIT rows, header-less as the official CSVs.
        src = os.path.join(a.mmlu, "test", f"{s}_test.csv")
        with open(src, newline="") as f:
            rows = list(csv.reader(f))[:LIMIT]
        data = os.path.join(tasks, f"{s}.csv")
        with open(data, "w", newline="") as f:
            w = csv.writer(f)
            w.writerow(["question", "A", "B", "C", "D", "answer"])
            w.writerows(rows)
        name = f"ctq_interop_mmlu_{s}"
        names.append(name)
        with open(os.path.join(tasks, f"{name}.yaml"), "w") as f:
            f.write(f"""task: {name}
dataset_path: csv
dataset_kwargs:
  data_files:
    test: {data}
test_split: test
output_type: multiple_choice
description: "The following are multiple choice questions (with answers) about {s.replace('_', ' ')}.\\n\\n"
doc_to_text: "{{{{question.strip()}}}}\\nA. {{{{A}}}}\\nB. {{{{B}}}}\\nC. {{{{C}}}}\\nD. {{{{D}}}}\\nAnswer:"
doc_to_choice: ["A", "B", "C", "D"]
doc_to_target: "{{{{['A', 'B', 'C', 'D'].index(answer)}}}}"
metric_list:
  - metric: acc
""")
    out = os.path.join(a.out, "lm-eval-out")
    shutil.rmtree(out, ignore_errors=True)
    env = dict(os.environ, HF_HUB_OFFLINE="1", HF_DATASETS_OFFLINE="1", TOKENIZERS_PARALLELISM="false")
    rc, so, se = run([sys.executable, "-m", "lm_eval", "--model", "local-completions", "--model_args",
                      f"model={model},base_url={base}/completions,tokenizer={tok},tokenizer_backend=huggingface,"
                      "num_concurrent=1,max_retries=1,tokenized_requests=True",
                      "--tasks", ",".join(names), "--include_path", tasks, "--log_samples", "--output_path", out],
                     900, env=env)
    if rc:
        m.add("ctq serve", "lm-eval local-completions", "FAILED", f"exit {rc}: {last_line(se)}")
        return
    ref = read_scores(ref_dir)
    mine = {}
    for s, name in zip(SUBJECTS, names):
        for path in glob.glob(os.path.join(out, "**", f"samples_{name}_*.jsonl"), recursive=True):
            for line in open(path):
                d = json.loads(line)
                mine[(s, str(d["doc_id"]))] = [float(r[0][0]) for r in d["resps"]]
    if len(mine) != len(SUBJECTS) * LIMIT:
        m.add("ctq serve", "lm-eval local-completions", "FAILED", f"{len(mine)} scored questions in its samples")
        return
    d = compare(mine, ref)
    state = "works" if d <= TOL else "FAILED"
    m.add("ctq serve", "lm-eval local-completions", state,
          f"{len(mine)} questions; max |loglikelihood - ctq eval --protocol lm-eval in process| {d:.3g} nats")


def converter(a):
    """llama.cpp's convert_hf_to_gguf.py (with its conversion/ and gguf-py/)
    from the llama-cpp-python sdist."""
    conv = os.path.join(a.out, "llama-convert")
    if os.path.exists(os.path.join(conv, "convert_hf_to_gguf.py")):
        return conv
    sd = os.path.join(a.out, "sdist")
    rc, so, se = run([sys.executable, "-m", "pip", "download", "-q", "--no-deps", "--no-binary", ":all:",
                      f"llama-cpp-python=={LLAMA_CPP_PYTHON}", "-d", sd], 600)
    tgz = glob.glob(os.path.join(sd, "llama_cpp_python-*.tar.gz"))
    if rc or not tgz:
        raise RuntimeError(f"pip download of the llama-cpp-python sdist failed: {last_line(se)}")
    tmp = os.path.join(a.out, "sdist-x")
    with tarfile.open(tgz[0]) as t:
        t.extractall(tmp, members=[x for x in t.getmembers() if "/vendor/llama.cpp/" in x.name and (
            x.name.endswith("/convert_hf_to_gguf.py") or "/conversion/" in x.name or "/gguf-py/" in x.name)])
    src = glob.glob(os.path.join(tmp, "*", "vendor", "llama.cpp"))[0]
    os.makedirs(conv, exist_ok=True)
    for n in ("convert_hf_to_gguf.py", "conversion", "gguf-py"):
        s = os.path.join(src, n)
        (shutil.copytree if os.path.isdir(s) else shutil.copy)(s, os.path.join(conv, n))
    return conv


# Meta-Llama-3-8B-Instruct's chat template (the fixture has none), for chat
# completions on ctq serve, which renders the Llama-3 family by its markers.
LLAMA3_TEMPLATE = (
    "{% set loop_messages = messages %}{% for message in loop_messages %}{% set content = "
    "'<|start_header_id|>' + message['role'] + '<|end_header_id|>\\n\\n' + message['content'] | trim + "
    "'<|eot_id|>' %}{% if loop.index0 == 0 %}{% set content = bos_token + content %}{% endif %}{{ content }}"
    "{% endfor %}{% if add_generation_prompt %}{{ '<|start_header_id|>assistant<|end_header_id|>\\n\\n' }}"
    "{% endif %}")

# The synthetic checkpoint's tokenizer is a fixture the converter's table of
# pre-tokenizer hashes cannot know: it is llama-bpe's regex (Llama 3), and
# there is no sentencepiece model.
CONVERT = """import sys
sys.path.insert(0, sys.argv[1])
sys.argv = [sys.argv[0]] + sys.argv[2:]
import conversion.base as base
def no_sentencepiece(self):
    raise FileNotFoundError("no tokenizer.model")
base.TextModel.get_vocab_base_pre = lambda self, tokenizer: "llama-bpe"
base.TextModel._set_vocab_sentencepiece = no_sentencepiece
import convert_hf_to_gguf
convert_hf_to_gguf.main()
"""


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ctq", default=os.path.join(ROOT, "build", "ctq"))
    ap.add_argument("--out", default=os.path.join(ROOT, "build", "interop"))
    ap.add_argument("--mmlu", default=os.path.join(ROOT, "..", "shared", "datasets", "mmlu"))
    a = ap.parse_args()
    a.ctq = os.path.abspath(a.ctq)
    a.out = os.path.abspath(a.out)
    os.makedirs(a.out, exist_ok=True)
    if not os.path.isdir(os.path.join(a.mmlu, "test")):
        a.mmlu = os.path.join(ROOT, "datasets", "mmlu")
    m = Matrix()

    # 1. the models
    models = os.path.join(a.out, "models")
    bf16, w8a8 = os.path.join(models, "bf16"), os.path.join(models, "w8a8")
    shutil.rmtree(models, ignore_errors=True)
    for cmd in ([a.ctq, "make-model", "--arch", "qwen3", "--preset", "tiny", "--vocab", "2048", "--seed", "1",
                 "--quiet", bf16], [a.ctq, "quantize", bf16, w8a8, "--quiet"]):
        rc, so, se = run(cmd, 120)
        if rc:
            sys.exit(f"interop: {' '.join(cmd)}: exit {rc}: {last_line(se)}")
    fix = os.path.join(ROOT, "tests", "fixtures", "tokenizers", "llama3-small")
    tc = json.load(open(os.path.join(fix, "tokenizer_config.json")))
    tc["eos_token"] = "<|eot_id|>"  # the fixture's AddedToken dict, which transformers 5 refuses
    tc["chat_template"] = LLAMA3_TEMPLATE
    for d in (bf16, w8a8):
        shutil.copy(os.path.join(fix, "tokenizer.json"), d)
        json.dump(tc, open(os.path.join(d, "tokenizer_config.json"), "w"), indent=1)
    ref_w8a8 = in_process_eval(a, w8a8, w8a8, "w8a8")
    ref_w8a8_lm = in_process_eval(a, w8a8, w8a8, "w8a8-lm-eval", "lm-eval")
    ref_bf16 = in_process_eval(a, bf16, bf16, "bf16")
    # llama.cpp prepends the tokenizer's BOS to a string prompt
    ref_bf16_bos = in_process_eval(a, bf16, bf16, "bf16-bos", extra=("--add-bos",))

    # 2. ctq serve
    port = free_port()
    srv = Server("ctq serve", [a.ctq, "serve", "--model", w8a8, "--tokenizer", w8a8, "--backend", "reference",
                               "--port", str(port), "--quiet"], port, os.path.join(a.out, "ctq-serve.log"),
                 ready_s=60)
    try:
        if not srv.ready:
            m.add("ctq serve", "start", "FAILED", "no answer to GET /v1/models in 60 s (ctq-serve.log)")
        else:
            name = json.loads(urllib.request.urlopen(srv.base + "/models").read())["data"][0]["id"]
            openai_client(m, srv.base, name)
            bench_serve(m, a, "ctq serve", srv.base, w8a8)
            eval_url(m, a, "ctq serve", srv.base, w8a8, name, ref_w8a8)
            lm_eval(m, a, srv.base, name, w8a8, ref_w8a8_lm)
    finally:
        srv.stop()

    # 3. transformers serve, on the BF16 checkpoint (CPU)
    port = free_port()
    # GET /v1/models scans the hub cache, and answers 500 when it is missing.
    hub = os.path.join(a.out, "hf-hub")
    os.makedirs(hub, exist_ok=True)
    env = dict(os.environ, HF_HUB_OFFLINE="1", HF_HUB_CACHE=hub, TOKENIZERS_PARALLELISM="false")
    tfs = os.path.join(os.path.dirname(sys.executable), "transformers")
    srv = Server("transformers serve", [tfs, "serve", bf16, "--host", "127.0.0.1", "--port", str(port),
                                        "--device", "cpu"], port, os.path.join(a.out, "transformers-serve.log"),
                 env=env, ready_s=300)
    try:
        if not srv.ready:
            m.add("transformers serve", "start", "FAILED", "no answer in 300 s (transformers-serve.log)")
        else:
            bench_serve(m, a, "transformers serve", srv.base, bf16, model=bf16)
            eval_url(m, a, "transformers serve", srv.base, bf16, bf16, ref_bf16)
    finally:
        srv.stop()

    # 4. llama-cpp-python's server, on a GGUF (F32) of the BF16 checkpoint. It
    # runs one request at a time, and by default ends a running stream with
    # data: [DONE] and no finish_reason when another request waits (which
    # ctq bench serve counts as failed): --interrupt_requests False queues
    # them instead.
    gguf = os.path.join(models, "tiny-f32.gguf")
    try:
        conv = converter(a)
        script = os.path.join(a.out, "convert.py")
        open(script, "w").write(CONVERT)
        rc, so, se = run([sys.executable, script, conv, bf16, "--outfile", gguf, "--outtype", "f32"], 600)
        if rc:
            raise RuntimeError(f"convert_hf_to_gguf.py: exit {rc}: {last_line(se)}")
    except Exception as e:
        m.add("llama-cpp-python", "GGUF conversion", "FAILED", str(e))
        gguf = None
    if gguf:
        port = free_port()
        srv = Server("llama-cpp-python", [sys.executable, "-m", "llama_cpp.server", "--model", gguf, "--host",
                                          "127.0.0.1", "--port", str(port), "--n_ctx", "2048", "--model_alias",
                                          "tiny", "--interrupt_requests", "False"], port, os.path.join(a.out, "llama-cpp-python.log"), ready_s=120)
        try:
            if not srv.ready:
                m.add("llama-cpp-python", "start", "FAILED", "no answer in 120 s (llama-cpp-python.log)")
            else:
                bench_serve(m, a, "llama-cpp-python", srv.base, bf16, model="tiny")
                eval_url(m, a, "llama-cpp-python", srv.base, bf16, "tiny", ref_bf16, ref_bf16_bos)
        finally:
            srv.stop()

    m.write(a.out)
    print(open(os.path.join(a.out, "matrix.md")).read())
    if not m.ok():
        print("interop: a cell is neither working nor refused with a clear reason", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
