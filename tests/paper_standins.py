"""Tiny random-weight stand-ins for the paper's models (tests/test_paper_profile.py).

Each stand-in has the real model's architecture (``config.model_type`` and the settings that
change its code path: Gemma-2's soft-capping and sliding window, Qwen2's and Llama's grouped
query heads, RoBERTa's position offset, ELECTRA's embedding projection), at a width of 32 and 2-4
layers, and a tokenizer of the real one's kind (WordPiece for BERT / ELECTRA, byte-level BPE for
RoBERTa, Qwen2 and Llama-3, a SentencePiece-style BPE for Gemma) trained on a few hundred EWT
sentences, with the real special tokens and, for the instruction-tuned causal models, a chat
template of the real one's shape.
"""

from __future__ import annotations

import json
from pathlib import Path

import torch

from olacore.profiles import PAPER_CAUSAL, PAPER_ENCODERS

EWT = "ud_english_ewt/en_ewt-ud-train.conllu"

# The turn markup of each model's own chat template (the structure, written here).
_CHATML = ("{% for m in messages %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}<|im_end|>\n{% endfor %}"
           "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}")
_GEMMA = ("{{ bos_token }}{% for m in messages %}<start_of_turn>{{ 'model' if m['role'] == 'assistant' else m['role'] }}\n"
          "{{ m['content'] }}<end_of_turn>\n{% endfor %}{% if add_generation_prompt %}<start_of_turn>model\n{% endif %}")
_LLAMA3 = ("{{ bos_token }}{% for m in messages %}<|start_header_id|>{{ m['role'] }}<|end_header_id|>\n\n"
           "{{ m['content'] }}<|eot_id|>{% endfor %}"
           "{% if add_generation_prompt %}<|start_header_id|>assistant<|end_header_id|>\n\n{% endif %}")

SMALL = dict(hidden_size=32, intermediate_size=64, num_attention_heads=4, max_position_embeddings=512)

#: id -> (model_type, config fields, tokenizer kind, special tokens, chat template)
STANDINS = {
    "Qwen/Qwen2-1.5B-Instruct": ("qwen2", dict(num_hidden_layers=3, num_key_value_heads=2, tie_word_embeddings=True),
                                 "bytebpe", dict(eos="<|im_end|>", pad="<|endoftext|>",
                                                 extra=["<|endoftext|>", "<|im_start|>", "<|im_end|>"]), _CHATML),
    "google/gemma-2-2b-it": ("gemma2", dict(num_hidden_layers=4, num_key_value_heads=2, head_dim=8, sliding_window=4,
                                            attn_logit_softcapping=50.0, final_logit_softcapping=30.0,
                                            query_pre_attn_scalar=8),
                             "spbpe", dict(bos="<bos>", eos="<eos>", pad="<pad>", unk="<unk>",
                                           extra=["<pad>", "<eos>", "<bos>", "<unk>", "<start_of_turn>", "<end_of_turn>"]),
                             _GEMMA),
    "meta-llama/Llama-3.2-3B-Instruct": ("llama", dict(num_hidden_layers=3, num_key_value_heads=2, tie_word_embeddings=True,
                                                       rope_scaling={"rope_type": "llama3", "factor": 32.0,
                                                                     "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                                                                     "original_max_position_embeddings": 64}),
                                         "bytebpe", dict(bos="<|begin_of_text|>", eos="<|eot_id|>",
                                                         extra=["<|begin_of_text|>", "<|end_of_text|>", "<|start_header_id|>",
                                                                "<|end_header_id|>", "<|eot_id|>"]), _LLAMA3),
    "bert-base-cased": ("bert", dict(num_hidden_layers=3), "wordpiece", {}, None),
    "roberta-base": ("roberta", dict(num_hidden_layers=3), "roberta", {}, None),
    "google/electra-base-generator": ("electra", dict(num_hidden_layers=3, embedding_size=16), "wordpiece", {}, None),
}
assert set(STANDINS) == set(PAPER_CAUSAL + PAPER_ENCODERS)


def ewt_sentences(data: Path, n: int = 400) -> list[str]:
    out = []
    for line in (data / EWT).read_text(encoding="utf-8").splitlines():
        if line.startswith("# text = "):
            out.append(line[len("# text = "):])
            if len(out) == n:
                break
    return out


def _tokenizer(kind: str, special: dict, template: str | None, sentences: list[str], vocab: int):
    from tokenizers import Tokenizer, decoders, models, normalizers, pre_tokenizers, processors, trainers
    from transformers import PreTrainedTokenizerFast

    if kind == "wordpiece":
        tokens = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
        tok = Tokenizer(models.WordPiece(unk_token="[UNK]"))
        tok.normalizer = normalizers.BertNormalizer(lowercase=False)
        tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
        tok.decoder = decoders.WordPiece()
        tok.train_from_iterator(sentences, trainers.WordPieceTrainer(vocab_size=vocab, special_tokens=tokens))
        tok.post_processor = processors.TemplateProcessing(
            single="[CLS] $A [SEP]", pair="[CLS] $A [SEP] $B [SEP]",
            special_tokens=[("[CLS]", tok.token_to_id("[CLS]")), ("[SEP]", tok.token_to_id("[SEP]"))])
        names = dict(unk_token="[UNK]", pad_token="[PAD]", cls_token="[CLS]", sep_token="[SEP]", mask_token="[MASK]")
    elif kind == "roberta":
        tokens = ["<s>", "<pad>", "</s>", "<unk>", "<mask>"]
        tok = Tokenizer(models.BPE())
        tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
        tok.decoder = decoders.ByteLevel()
        tok.train_from_iterator(sentences, trainers.BpeTrainer(vocab_size=vocab, special_tokens=tokens,
                                                               initial_alphabet=pre_tokenizers.ByteLevel.alphabet()))
        tok.post_processor = processors.RobertaProcessing(("</s>", 2), ("<s>", 0), trim_offsets=True)
        names = dict(bos_token="<s>", eos_token="</s>", unk_token="<unk>", pad_token="<pad>", cls_token="<s>",
                     sep_token="</s>", mask_token="<mask>")
    else:
        tokens = special["extra"]
        if kind == "bytebpe":
            tok = Tokenizer(models.BPE())
            tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
            tok.decoder = decoders.ByteLevel()
            tok.train_from_iterator(sentences, trainers.BpeTrainer(vocab_size=vocab, special_tokens=tokens,
                                                                   initial_alphabet=pre_tokenizers.ByteLevel.alphabet()))
        else:  # Gemma: spaces as U+2581, unknown characters to <unk>
            tok = Tokenizer(models.BPE(unk_token="<unk>"))
            tok.pre_tokenizer = pre_tokenizers.Metaspace(replacement="\u2581", prepend_scheme="never")
            tok.decoder = decoders.Metaspace(replacement="\u2581", prepend_scheme="never")
            tok.train_from_iterator(sentences, trainers.BpeTrainer(vocab_size=vocab, special_tokens=tokens))
        if "bos" in special:
            bos = special["bos"]
            tok.post_processor = processors.TemplateProcessing(single=f"{bos} $A", pair=f"{bos} $A {bos} $B",
                                                               special_tokens=[(bos, tok.token_to_id(bos))])
        elif kind == "bytebpe":
            tok.post_processor = processors.ByteLevel(trim_offsets=False)
        names = {f"{key}_token": special[key] for key in ("bos", "eos", "pad", "unk") if key in special}
    wrapped = PreTrainedTokenizerFast(tokenizer_object=tok, model_max_length=512, **names)
    if template is not None:
        wrapped.chat_template = template
    return wrapped


def build_standins(root: Path, data: Path, seed: int = 0) -> dict[str, str]:
    """Save every paper model's stand-in under ``root``; returns the id -> folder map."""
    from transformers import AutoConfig, AutoModelForCausalLM, AutoModelForMaskedLM

    sentences = ewt_sentences(data)
    out = {}
    for index, (name, (model_type, fields, kind, special, template)) in enumerate(STANDINS.items()):
        tokenizer = _tokenizer(kind, special, template, sentences, vocab=600)
        ids = {f"{k}_token_id": tokenizer.convert_tokens_to_ids(getattr(tokenizer, f"{k}_token"))
               for k in ("bos", "eos", "pad") if getattr(tokenizer, f"{k}_token", None) is not None}
        config = AutoConfig.for_model(model_type, vocab_size=len(tokenizer), **{**SMALL, **fields, **ids})
        torch.manual_seed(seed + index)
        auto = AutoModelForCausalLM if name in PAPER_CAUSAL else AutoModelForMaskedLM
        model = auto.from_config(config)
        folder = root / name.replace("/", "--")
        model.save_pretrained(folder)
        tokenizer.save_pretrained(folder)
        out[name] = str(folder)
    (root / "model_folders.json").write_text(json.dumps(out, indent=1))
    return out
