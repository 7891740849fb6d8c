#!/usr/bin/env python3
"""Golden prompts for tests/test_eval_prompts.c, rendered from the protocol
text of shared/spec/evaluation-and-benchmarking.md section 1 (and the official
scripts it cites), independently of eval/prompts.c.

Protocols (the spec's wording, as implemented here):
  mmlu-hendrycks  evaluate.py: "The following are multiple choice questions
                  (with answers) about {format_subject(s)}.\n\n", where
                  format_subject prepends " " to every "_"-separated word (two
                  spaces after "about"); shots: question, "\nA. x" .. "\nD. x",
                  "\nAnswer:", " X\n\n"; the question ends at "Answer:".
  mmlu-lm-eval    description "The following are multiple choice questions
                  (with answers) about {subject with spaces}.\n\n";
                  doc_to_text "{{question.strip()}}\nA. ..\nD. ..\nAnswer:";
                  shots joined as doc_to_text + " " + letter + "\n\n".
  ceval-official  "以下是中国关于{科目}考试的单项选择题，请选出其中的正确答案。\n\n";
                  question, "\nA. x" .., "\n答案：" + X + "\n\n".
  ceval-lm-eval   "以下是中国关于{中文名}的单项选择题，请选出其中的正确答案。\n\n";
                  "{{question.strip()}}\nA. ..\n答案：", shots + " " + X + "\n\n".
  cmmlu-official  CMMLU mp_utils.py: "以下是关于{name_zh}的单项选择题，请直接给出
                  正确答案的选项。\n\n"; "题目：" + question + choices +
                  "\n答案是：" + X + "\n\n".
Shots are the first k rows of the dev file; when the evaluated split is dev,
the question's own row is skipped (lm-eval's first_n sampler draws k+1 and
drops the document itself).

Fields are read with Python's csv module, i.e. as the file holds them. The
official scripts use pandas; pandas >= 2.0 reads the option text "None" as
NaN ("nan"), which the published runs (older pandas) did not, so the bytes
are the reference here.

Outputs:
  tests/fixtures/eval/prompts.json       one entry per case: id, benchmark,
      protocol, data ("sample": datasets/ of this repository; "real":
      ../shared/datasets), split, subject, index, shots, and either "file"
      (the golden bytes, for sample data) or "sha256" + "bytes" (for real
      data, whose text is not copied into this repository).
  tests/fixtures/eval/prompts/<id>.txt   the sample goldens.

Usage: python3 tests/oracle/render_prompts.py   (from the repository root)
"""
import csv
import hashlib
import json
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SAMPLE = os.path.join(ROOT, "datasets")
REAL = os.path.join(os.path.dirname(ROOT), "shared", "datasets")
OUT = os.path.join(ROOT, "tests", "fixtures", "eval")

CEVAL_ZH = {
    "computer_network": "计算机网络", "advanced_mathematics": "高等数学", "law": "法学",
    "physician": "医师资格", "college_economics": "大学经济学",
}
CMMLU_ZH = {
    "agronomy": "农学", "ancient_chinese": "古汉语", "computer_science": "计算机科学",
    "world_history": "世界历史",
}


def read_rows(bench, path):
    """Rows as dicts: question, A..D, answer (None when the split has none)."""
    with open(path, newline="", encoding="utf-8-sig") as f:
        rows = list(csv.reader(f))
    out = []
    if bench == "mmlu":
        for r in rows:
            out.append(dict(question=r[0], A=r[1], B=r[2], C=r[3], D=r[4], answer=r[5]))
    elif bench == "ceval":
        head = rows[0]
        for r in rows[1:]:
            d = dict(zip(head, r))
            out.append(dict(question=d["question"], A=d["A"], B=d["B"], C=d["C"], D=d["D"],
                            answer=d.get("answer")))
    else:
        for r in rows[1:]:
            out.append(dict(question=r[1], A=r[2], B=r[3], C=r[4], D=r[5], answer=r[6]))
    return out


def file_of(bench, root, split, subject):
    if bench == "cmmlu":
        return os.path.join(root, bench, split, subject + ".csv")
    return os.path.join(root, bench, split, f"{subject}_{split}.csv")


def fmt_subject(subject):
    s = ""
    for entry in subject.split("_"):
        s += " " + entry
    return s


def hendrycks(subject, shots, q):
    def example(d, include_answer):
        p = d["question"]
        for c in "ABCD":
            p += "\n{}. {}".format(c, d[c])
        p += "\nAnswer:"
        if include_answer:
            p += " {}\n\n".format(d["answer"])
        return p
    prompt = "The following are multiple choice questions (with answers) about {}.\n\n".format(
        fmt_subject(subject))
    for d in shots:
        prompt += example(d, True)
    return prompt + example(q, False)


def lm_eval(description, doc_to_text, shots, q):
    ctx = description
    for d in shots:
        ctx += doc_to_text(d) + " " + d["answer"] + "\n\n"
    return ctx + doc_to_text(q)


def mmlu_lm_eval(subject, shots, q):
    desc = "The following are multiple choice questions (with answers) about {}.\n\n".format(
        " ".join(subject.split("_")))
    text = lambda d: "{}\nA. {}\nB. {}\nC. {}\nD. {}\nAnswer:".format(
        d["question"].strip(), d["A"], d["B"], d["C"], d["D"])
    return lm_eval(desc, text, shots, q)


def ceval_official(subject, shots, q):
    def example(d, include_answer):
        p = d["question"]
        for c in "ABCD":
            p += f"\n{c}. {d[c]}"
        p += "\n答案："
        if include_answer:
            p += d["answer"] + "\n\n"
        return p
    prompt = f"以下是中国关于{CEVAL_ZH[subject]}考试的单项选择题，请选出其中的正确答案。\n\n"
    for d in shots:
        prompt += example(d, True)
    return prompt + example(q, False)


def ceval_lm_eval(subject, shots, q):
    desc = f"以下是中国关于{CEVAL_ZH[subject]}的单项选择题，请选出其中的正确答案。\n\n"
    text = lambda d: "{}\nA. {}\nB. {}\nC. {}\nD. {}\n答案：".format(
        d["question"].strip(), d["A"], d["B"], d["C"], d["D"])
    return lm_eval(desc, text, shots, q)


def cmmlu_official(subject, shots, q):
    def example(d, include_answer):
        p = "题目：" + d["question"]
        for c in "ABCD":
            p += "\n{}. {}".format(c, d[c])
        p += "\n答案是："
        if include_answer:
            p += "{}\n\n".format(d["answer"])
        return p
    prompt = "以下是关于{}的单项选择题，请直接给出正确答案的选项。\n\n".format(CMMLU_ZH[subject])
    for d in shots:
        prompt += example(d, True)
    return prompt + example(q, False)


RENDER = {
    ("mmlu", "original"): hendrycks,
    ("mmlu", "lm-eval"): mmlu_lm_eval,
    ("ceval", "original"): ceval_official,
    ("ceval", "lm-eval"): ceval_lm_eval,
    ("cmmlu", "original"): cmmlu_official,
}

# (benchmark, protocol, data, split, subject, index, shots)
CASES = []
for proto in ("original", "lm-eval"):
    CASES += [
        ("mmlu", proto, "sample", "test", "abstract_algebra", 0, 5),
        ("mmlu", proto, "sample", "test", "abstract_algebra", 2, 5),  # multi-line, "None"
        ("mmlu", proto, "sample", "test", "anatomy", 2, 0),           # outer spaces
        ("mmlu", proto, "sample", "test", "sociology", 3, 3),         # CRLF file
        ("mmlu", proto, "sample", "val", "philosophy", 0, 5),         # BOM file
        ("mmlu", proto, "sample", "dev", "anatomy", 1, 4),            # shots skip itself
        ("ceval", proto, "sample", "val", "computer_network", 0, 5),
        ("ceval", proto, "sample", "val", "advanced_mathematics", 2, 0),
        ("ceval", proto, "sample", "val", "physician", 1, 2),
        ("mmlu", proto, "real", "test", "abstract_algebra", 0, 5),
        ("mmlu", proto, "real", "test", "business_ethics", 3, 5),     # outer spaces
        ("mmlu", proto, "real", "test", "college_mathematics", 8, 5), # multi-line
        ("mmlu", proto, "real", "test", "college_computer_science", 10, 0),  # "None"
        ("mmlu", proto, "real", "test", "high_school_government_and_politics", 0, 5),
        ("ceval", proto, "real", "val", "computer_network", 0, 5),
        ("ceval", proto, "real", "val", "advanced_mathematics", 3, 0),
        ("ceval", proto, "real", "dev", "law", 2, 4),
    ]
CASES += [
    ("cmmlu", "original", "sample", "test", "agronomy", 0, 5),
    ("cmmlu", "original", "sample", "test", "ancient_chinese", 3, 0),
    ("cmmlu", "original", "sample", "dev", "world_history", 4, 4),
    ("cmmlu", "original", "real", "test", "agronomy", 0, 5),
    ("cmmlu", "original", "real", "test", "ancient_chinese", 5, 5),
    ("cmmlu", "original", "real", "test", "computer_science", 7, 0),
]


def main():
    os.makedirs(os.path.join(OUT, "prompts"), exist_ok=True)
    entries = []
    for bench, proto, data, split, subject, index, k in CASES:
        root = SAMPLE if data == "sample" else REAL
        if data == "real" and not os.path.isdir(REAL):
            sys.exit(f"{REAL} is missing: the real-data goldens need it")
        if (bench == "ceval" and subject not in CEVAL_ZH) or (bench == "cmmlu" and subject not in CMMLU_ZH):
            sys.exit(f"add the Chinese name of {subject}")
        items = read_rows(bench, file_of(bench, root, split, subject))
        dev = read_rows(bench, file_of(bench, root, "dev", subject))
        pool = [d for j, d in enumerate(dev) if not (split == "dev" and j == index)]
        text = RENDER[(bench, proto)](subject, pool[:k], items[index])
        pid = {"original": {"mmlu": "mmlu-hendrycks", "ceval": "ceval-official",
                            "cmmlu": "cmmlu-official"}[bench],
               "lm-eval": f"{bench}-lm-eval"}[proto]
        cid = f"{pid}.{data}.{split}.{subject}.{index}.k{k}"
        raw = text.encode("utf-8")
        e = dict(id=cid, benchmark=bench, protocol=proto, data=data, split=split,
                 subject=subject, index=index, shots=k)
        if data == "sample":
            name = cid + ".txt"
            with open(os.path.join(OUT, "prompts", name), "wb") as f:
                f.write(raw)
            e["file"] = "prompts/" + name
        else:
            e["sha256"] = hashlib.sha256(raw).hexdigest()
            e["bytes"] = len(raw)
        entries.append(e)
    with open(os.path.join(OUT, "prompts.json"), "w", encoding="utf-8") as f:
        json.dump({"generator": "tests/oracle/render_prompts.py", "cases": entries}, f,
                  indent=1, ensure_ascii=False)
        f.write("\n")
    print(f"{len(entries)} cases written to {OUT}")


if __name__ == "__main__":
    main()
