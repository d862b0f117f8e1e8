"""A tiny llama-architecture GGUF made at test time: a real model file for a real inference engine, offline.

The weights are seeded random numbers, so the file is byte-identical on every run and its words are nonsense.
One hidden dimension carries a constant, and the output matrix reads it as a per-token prior: tokens that
close a string or a bracket are likely, plain bytes are not. That keeps strings and arrays short (so replies
are fast on one CPU thread) without teaching the model any structure: the order of the tokens stays random,
so without a grammar almost no reply parses, and with one every reply does. That difference is what the
tests measure.

Usage: `python -m tests.real_engine.tiny_gguf OUT.gguf` (tests call `write_tiny_gguf`).
"""

from __future__ import annotations

import sys
from collections.abc import Mapping
from pathlib import Path

import numpy as np

N_EMBD = 64
N_LAYER = 2
N_HEAD = 4
N_FF = 128
N_CTX_TRAIN = 8192
SEED = 20240611

#: Chat template in the GGUF: plain "role: content" lines, no special tokens at all.
CHAT_TEMPLATE = (
    "{% for message in messages %}{{ message['role'] }}: {{ message['content'] }}\n{% endfor %}"
    "{% if add_generation_prompt %}assistant: {% endif %}"
)

ENGLISH = (
    "the a and to of in is it you that he she we they was for on are with as at be this have from or one "
    "had by word but not what all were when your can said there use each which do how their if will up "
    "other about out many then them these so some her would make like him into time has look two more "
    "go see number no way could people my than first water been call who day get come made may part "
    "bread square river festival market morning evening village friend plan walk talk happy quiet "
    "council baker library garden tea rain sun"
).split()

JAPANESE = (
    "こんにちは おはよう こんばんは ありがとう すみません はい いいえ 今日 明日 昨日 町 広場 川 橋 祭り "
    "市場 パン屋 図書館 庭 お茶 雨 晴れ 朝 昼 夜 友達 家族 話 計画 散歩 会議 賛成 反対 条件 心配 "
    "楽しい 静か 嬉しい 悲しい 私 あなた 彼 彼女 です ます でした ね よ か の に を は が と も で "
    "から まで 。 、 ！ ？ 「 」"
).split()

#: JSON punctuation as whole tokens, as real tokenizers have them.
JSON_FRAGMENTS = (
    '{"',
    '"}',
    '":',
    '",',
    '":"',
    '","',
    '"]',
    '["',
    "},",
    "}]",
    "[{",
    '":{',
    '":[',
    "true",
    "false",
    "null",
)

CLOSING_QUOTES = ('"', '",', '"}', '"]', '":', '":"', '","')
CLOSING_BRACKETS = ("}", "]", "}]")

#: Prior logit per kind of token (before temperature); see the module docstring. Tokens that close a
#: string are the likeliest, so strings end after a few words.
PRIOR_QUOTE = 3.0
PRIOR_CLOSE = 2.0  # closing brackets: arrays and objects stay short
PRIOR_JSON = 0.5
PRIOR_DIGIT = -0.5
PRIOR_WORD = 0.0
PRIOR_CHAR = -1.0
PRIOR_BYTE = -2.5
PRIOR_EOS = 1.0


def vocabulary() -> tuple[list[str], list[int]]:
    """Token pieces and GGUF token types: <unk> <s> </s>, 256 byte tokens, printable ASCII, words, JSON."""
    from gguf import TokenType

    pieces = ["<unk>", "<s>", "</s>"]
    types = [TokenType.UNKNOWN, TokenType.CONTROL, TokenType.CONTROL]
    pieces += [f"<0x{b:02X}>" for b in range(256)]
    types += [TokenType.BYTE] * 256
    seen = set(pieces)
    normal = [chr(c) for c in range(0x21, 0x7F)] + ["\u2581"]
    normal += ["\u2581" + w for w in ENGLISH] + list(JAPANESE) + list(JSON_FRAGMENTS)
    for piece in normal:
        if piece not in seen:
            seen.add(piece)
            pieces.append(piece)
            types.append(TokenType.NORMAL)
    return pieces, [int(t) for t in types]


def prior(piece: str, token_type: int) -> float:
    """The prior logit of one token (the model's only 'knowledge')."""
    if piece == "</s>":
        return PRIOR_EOS
    if token_type != 1:
        return PRIOR_BYTE if piece.startswith("<0x") else -8.0
    if piece in CLOSING_QUOTES:
        return PRIOR_QUOTE
    if piece in CLOSING_BRACKETS:
        return PRIOR_CLOSE
    if piece in JSON_FRAGMENTS or piece in {"{", "}", "[", "]", ",", ":"}:
        return PRIOR_JSON
    if piece.isdigit():
        return PRIOR_DIGIT
    if len(piece) == 1 and piece.isascii():
        return PRIOR_CHAR
    return PRIOR_WORD


def build_tensors(n_vocab: int, priors: np.ndarray, seed: int = SEED) -> dict[str, np.ndarray]:
    """All weights, by GGUF tensor name (numpy shapes are GGUF dimensions reversed)."""
    rng = np.random.default_rng(seed)

    def matrix(rows: int, cols: int, scale: float) -> np.ndarray:
        return (rng.standard_normal((rows, cols)) * scale).astype(np.float16)

    embd = rng.standard_normal((n_vocab, N_EMBD)) * 0.1
    embd[:, 0] = 1.0  # the constant the prior rides on
    output = rng.standard_normal((n_vocab, N_EMBD)) * 0.01
    # After RMSNorm the constant dimension is about 1/rms ~= 6.3; scale so that logit ~= prior.
    output[:, 0] = priors / 6.3
    tensors: dict[str, np.ndarray] = {
        "token_embd.weight": embd.astype(np.float16),
        "output_norm.weight": np.ones(N_EMBD, dtype=np.float32),
        "output.weight": output.astype(np.float16),
    }
    for layer in range(N_LAYER):
        block = f"blk.{layer}"
        tensors[f"{block}.attn_norm.weight"] = np.ones(N_EMBD, dtype=np.float32)
        for name in ("attn_q", "attn_k", "attn_v", "attn_output"):
            tensors[f"{block}.{name}.weight"] = matrix(N_EMBD, N_EMBD, 0.02)
        tensors[f"{block}.ffn_norm.weight"] = np.ones(N_EMBD, dtype=np.float32)
        tensors[f"{block}.ffn_gate.weight"] = matrix(N_FF, N_EMBD, 0.02)
        tensors[f"{block}.ffn_up.weight"] = matrix(N_FF, N_EMBD, 0.02)
        tensors[f"{block}.ffn_down.weight"] = matrix(N_EMBD, N_FF, 0.02)
    return tensors


def write_tiny_gguf(path: Path, *, favour: Mapping[str, float] | None = None) -> Path:
    """Write the tiny model to `path` and return it.

    Args:
        path: the .gguf file to write (its folder must exist).
        favour: token piece -> prior logit overriding the default, e.g. {"<0x0A>": 6.0} for a model
            that loves raw newlines (the control-character test uses that).

    Returns:
        `path`. The same arguments always give the same bytes.
    """
    import gguf

    pieces, types = vocabulary()
    priors = np.array([prior(p, t) for p, t in zip(pieces, types, strict=True)], dtype=np.float64)
    for piece, value in (favour or {}).items():
        priors[pieces.index(piece)] = value
    writer = gguf.GGUFWriter(str(path), "llama")
    writer.add_name("machi-tiny-test")
    writer.add_context_length(N_CTX_TRAIN)
    writer.add_embedding_length(N_EMBD)
    writer.add_block_count(N_LAYER)
    writer.add_feed_forward_length(N_FF)
    writer.add_head_count(N_HEAD)
    writer.add_head_count_kv(N_HEAD)
    writer.add_rope_dimension_count(N_EMBD // N_HEAD)
    writer.add_layer_norm_rms_eps(1e-5)
    writer.add_file_type(gguf.LlamaFileType.MOSTLY_F16)
    writer.add_tokenizer_model("llama")
    writer.add_token_list(pieces)
    writer.add_token_scores([-float(len(p)) if t == 1 else 0.0 for p, t in zip(pieces, types, strict=True)])
    writer.add_token_types(types)
    writer.add_unk_token_id(0)
    writer.add_bos_token_id(1)
    writer.add_eos_token_id(2)
    writer.add_add_bos_token(False)
    writer.add_add_space_prefix(False)
    writer.add_chat_template(CHAT_TEMPLATE)
    for name, tensor in build_tensors(len(pieces), priors).items():
        writer.add_tensor(name, tensor)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return path


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: python -m tests.real_engine.tiny_gguf OUT.gguf")
    out = write_tiny_gguf(Path(sys.argv[1]))
    print(f"wrote {out} ({out.stat().st_size} bytes)")
