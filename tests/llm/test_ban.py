"""Banned openings become llama.cpp's logit bias: the first word token of each, written alone and after a
space; never a one-letter word, a punctuation mark or a byte of a Japanese character. No model is loaded: a
tokenizer with a small vocabulary stands in for the GGUF's."""

from __future__ import annotations

from backend.llm.ban import BANNED_BIAS, logit_bias
from backend.llm.base import GenerateOptions
from backend.llm.llamacpp import LlamaCppLLM

#: A byte-level vocabulary in miniature: whole words, words after a space, and bytes for the rest.
WORDS = [
    "Tomorrow",
    " Tomorrow",
    "Mia",
    " Mia",
    ",",
    " you",
    " just",
    "I",
    " I",
    "'m",
    " inviting",
    "明日",
    "夜",
]
VOCAB = {piece.encode("utf-8"): index for index, piece in enumerate(WORDS)}
BYTE_BASE = 1000  # token id of a lone byte: BYTE_BASE + its value


class Tokenizer:
    """Greedy longest match over VOCAB, lone bytes for the rest (as a byte-level BPE falls back to bytes)."""

    def tokenize(self, text: bytes, add_bos: bool = True, special: bool = False) -> list[int]:
        assert not add_bos  # a bias is about the reply's tokens, never a BOS
        tokens, at = [], 0
        while at < len(text):
            match = max((piece for piece in VOCAB if text.startswith(piece, at)), key=len, default=None)
            if match is None:
                tokens.append(BYTE_BASE + text[at])
                at += 1
            else:
                tokens.append(VOCAB[match])
                at += len(match)
        return tokens

    def detokenize(self, tokens: list[int]) -> bytes:
        pieces = {index: piece for piece, index in VOCAB.items()}
        return b"".join(pieces.get(t, bytes([t - BYTE_BASE]) if t >= BYTE_BASE else b"") for t in tokens)


def token(piece: str) -> int:
    return VOCAB[piece.encode("utf-8")]


def test_the_first_word_of_each_opening_is_banned_alone_and_after_a_space() -> None:
    bias = logit_bias(Tokenizer(), ["Tomorrow at 7pm I am throwing a party", "Mia, you just told me"])
    assert bias == {
        token("Tomorrow"): BANNED_BIAS,
        token(" Tomorrow"): BANNED_BIAS,
        token("Mia"): BANNED_BIAS,
        token(" Mia"): BANNED_BIAS,
    }


def test_a_one_letter_word_or_a_suffix_is_passed_over_for_the_next_word() -> None:
    bias = logit_bias(Tokenizer(), ["I'm inviting Ben to my party"])
    assert set(bias) == {token(" inviting")}  # never "I" (every reply needs it) nor "'m"


def test_japanese_bans_a_whole_word_never_a_byte_of_a_character() -> None:
    assert set(logit_bias(Tokenizer(), ["明日の夜7時にパーティー"])) == {token("明日")}
    # "ね" is not in the vocabulary: its first byte is shared by most kana, so nothing is banned.
    assert logit_bias(Tokenizer(), ["ねえ、明日"]) == {}
    assert logit_bias(Tokenizer(), ["", "  ", "...", "「」"]) == {}


class FakeLlama(Tokenizer):
    """What `LlamaCppLLM.request` reads of a model when the reply is free text."""


def test_the_llamacpp_request_carries_the_bias_only_on_a_re_ask() -> None:
    provider = LlamaCppLLM(FakeLlama(), model_name="m.gguf", seed=1)
    messages = [{"role": "user", "content": "Hi"}]
    plain = provider.request(messages, GenerateOptions(), None)
    assert "logit_bias" not in plain
    reask = GenerateOptions(temperature=1.0, banned_openings=["Mia, you just told me"])
    request = provider.request(messages, reask, None)
    assert request["logit_bias"] == {token("Mia"): BANNED_BIAS, token(" Mia"): BANNED_BIAS}
    assert request["temperature"] == 1.0
    # Nothing bannable: no bias at all (llama-cpp-python then adds no logits processor).
    assert "logit_bias" not in provider.request(messages, GenerateOptions(banned_openings=["I"]), None)
