"""Make the text fixtures for test/python/test_text.py (run with the oracle venv, which has
transformers; CI has none, so the outputs are committed).

    /tmp/oracle-pypi/bin/python tools/oracle/make_text_fixtures.py test/python/fixtures

Writes, under OUT:
  tok_chatml/    tokenizer.json (a byte-level BPE trained here, vocab <= 256 so its ids fit the
                 test models' vocabulary), tokenizer_config.json with a ChatML template and
                 special tokens given as AddedToken dicts; the tokenizer.json has no post-processor
                 and add_bos_token is not set (transformers then adds nothing).
  tok_bos/       the same vocabulary with a post-processor that puts <s> first (as Llama's
                 tokenizer.json does), special tokens as plain strings, and a Llama-2-style
                 template with bos_token and raise_exception on roles. Its tokenizer_config says
                 add_bos_token false: transformers ignores that key when tokenizer.json exists,
                 and the fixture shows it.
  tok_wordpiece/ a WordPiece tokenizer (not BPE) with clean_up_tokenization_spaces true, which
                 transformers applies to such decodes (" ." -> "."), and no chat template.
  text_expected.json  what transformers makes of them: encodings (with and without special
                 tokens), decodings of fixed and random id sequences, and apply_chat_template
                 renderings and token ids for several conversations.
"""
import json
import os
import random
import sys

from tokenizers import (Tokenizer, decoders, models, normalizers, pre_tokenizers, processors,
                        trainers)
from transformers import AutoTokenizer

SPECIALS = ["<pad>", "<s>", "</s>", "<|im_start|>", "<|im_end|>"]

# Training text: ASCII words plus multi-byte characters, so that the byte-level alphabet has the
# bytes of é, ü, ß, 中文 and an emoji and some of them are split over tokens.
CORPUS = [
    "the quick brown fox jumps over the lazy dog",
    "hello world, hello there! how are you today?",
    "Caf\u00e9 cr\u00e8me br\u00fbl\u00e9e, \u00fcber Stra\u00dfe",
    "\u4e2d\u6587\u5b57\u7b26 \u4f60\u597d \u4e16\u754c",
    "smile \U0001f642 and wave \U0001f44b",
    "system user assistant: You are a helpful assistant.",
    "numbers 0123456789 and symbols []{}()<>+-*/=_.,;:'\"!?#$%&@^~|\\`",
    "ABCDEFGHIJKLMNOPQRSTUVWXYZ abcdefghijklmnopqrstuvwxyz\n\ttabs and newlines\n",
]

CHATML = (
    "{% for message in messages %}"
    "{{ '<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>' + '\\n' }}"
    "{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}"
)

# Llama-2 style: the system prompt folded into the first user turn, roles must alternate.
LLAMA2 = """{% if messages[0]['role'] == 'system' %}
    {% set loop_messages = messages[1:] %}
    {% set system_message = '<<SYS>>\\n' + messages[0]['content'] | trim + '\\n<</SYS>>\\n\\n' %}
{% else %}
    {% set loop_messages = messages %}
    {% set system_message = '' %}
{% endif %}
{% for message in loop_messages %}
    {% if (message['role'] == 'user') != (loop.index0 % 2 == 0) %}
{{ raise_exception('Conversation roles must alternate user/assistant/user/assistant/...') }}
    {% endif %}
    {% if loop.index0 == 0 %}
        {% set content = system_message + message['content'] %}
    {% else %}
        {% set content = message['content'] %}
    {% endif %}
    {% if message['role'] == 'user' %}
{{ bos_token + '[INST] ' + content | trim + ' [/INST]' }}
    {% elif message['role'] == 'assistant' %}
{{ ' ' + content | trim + ' ' + eos_token }}
    {% endif %}
{% endfor %}
{% if add_generation_prompt %}{{ ' ' }}{% endif %}
{{ tools | tojson if tools else '' }}"""

CONVERSATIONS = [
    [{"role": "user", "content": "hello there"}],
    [{"role": "system", "content": "You are a helpful assistant."},
     {"role": "user", "content": "how are you today?"}],
    [{"role": "system", "content": "  be brief  "},
     {"role": "user", "content": "Caf\u00e9 \U0001f642"},
     {"role": "assistant", "content": "\u4f60\u597d \u4e16\u754c"},
     {"role": "user", "content": "the lazy dog\nand the fox"}],
    # Two user turns in a row: the Llama-2 template raises.
    [{"role": "user", "content": "a"}, {"role": "user", "content": "b"}],
]


def train():
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    # No initial_alphabet: only the bytes that occur in the corpus, which keeps the vocabulary
    # within 256 with room for merges.
    trainer = trainers.BpeTrainer(vocab_size=256, special_tokens=SPECIALS, show_progress=False)
    tok.train_from_iterator(CORPUS * 4, trainer=trainer)
    assert tok.get_vocab_size() <= 256, tok.get_vocab_size()
    return tok


def train_wordpiece():
    tok = Tokenizer(models.WordPiece(unk_token="[UNK]"))
    tok.normalizer = normalizers.BertNormalizer(lowercase=True)
    tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    # The decoder's own clean-up off: transformers' clean_up_tokenization_spaces does it.
    tok.decoder = decoders.WordPiece(cleanup=False)
    trainer = trainers.WordPieceTrainer(vocab_size=200, special_tokens=["[PAD]", "[UNK]", "[CLS]",
                                                                        "[SEP]"],
                                        show_progress=False)
    tok.train_from_iterator(CORPUS * 4 + ["it's what they've done, isn't it? yes . no !"] * 4,
                            trainer=trainer)
    return tok


def added(content):
    return {"__type": "AddedToken", "content": content, "lstrip": False, "rstrip": False,
            "normalized": False, "single_word": False, "special": True}


def write_folder(path, tok, config):
    os.makedirs(path, exist_ok=True)
    tok.save(os.path.join(path, "tokenizer.json"))
    with open(os.path.join(path, "tokenizer_config.json"), "w") as f:
        json.dump(config, f, indent=2, ensure_ascii=False)


def oracle(path, rng):
    hf = AutoTokenizer.from_pretrained(path)
    texts = CORPUS + ["", " leading space", "unseen \u00f1 char", "<|im_start|>user\nhi<|im_end|>",
                      "a</s>b<s>c"]
    out = {"class": type(hf).__name__, "encode": [], "decode": [], "chat": []}
    for t in texts:
        out["encode"].append({"text": t, "ids": hf(t)["input_ids"],
                              "ids_plain": hf(t, add_special_tokens=False)["input_ids"]})
    vocab = hf.backend_tokenizer.get_vocab_size()
    seqs = [hf(t, add_special_tokens=False)["input_ids"] for t in CORPUS]
    seqs += [[rng.randrange(vocab) for _ in range(rng.randrange(1, 40))] for _ in range(60)]
    for ids in seqs:
        out["decode"].append({"ids": ids, "text": hf.decode(ids),
                              "text_skip": hf.decode(ids, skip_special_tokens=True)})
    texts_extra = ["it's what they've done , isn't it ? yes . no !"]
    for t in texts_extra:
        ids = hf(t, add_special_tokens=False)["input_ids"]
        out["decode"].append({"ids": ids, "text": hf.decode(ids),
                              "text_skip": hf.decode(ids, skip_special_tokens=True)})
    if hf.chat_template is None:
        return out
    for conv in CONVERSATIONS:
        for gen in (False, True):
            try:
                text = hf.apply_chat_template(conv, tokenize=False, add_generation_prompt=gen)
                ids = hf.apply_chat_template(conv, tokenize=True, add_generation_prompt=gen,
                                             return_dict=False)
                out["chat"].append({"messages": conv, "add_generation_prompt": gen,
                                    "text": text, "ids": list(ids)})
            except Exception as e:  # the template's raise_exception
                out["chat"].append({"messages": conv, "add_generation_prompt": gen,
                                    "error": str(e)})
    return out


def main():
    out_dir = sys.argv[1]
    tok = train()
    write_folder(os.path.join(out_dir, "tok_chatml"), tok, {
        "tokenizer_class": "PreTrainedTokenizerFast", "model_max_length": 256,
        "bos_token": added("<s>"), "eos_token": added("<|im_end|>"), "pad_token": added("<pad>"),
        "clean_up_tokenization_spaces": False, "chat_template": CHATML})
    tok.post_processor = processors.TemplateProcessing(
        single="<s> $A", pair="<s> $A <s> $B", special_tokens=[("<s>", tok.token_to_id("<s>"))])
    write_folder(os.path.join(out_dir, "tok_bos"), tok, {
        "tokenizer_class": "PreTrainedTokenizerFast", "model_max_length": 256,
        "bos_token": "<s>", "eos_token": "</s>", "pad_token": "<pad>", "add_bos_token": False,
        "add_eos_token": False, "clean_up_tokenization_spaces": False, "chat_template": LLAMA2})
    write_folder(os.path.join(out_dir, "tok_wordpiece"), train_wordpiece(), {
        "tokenizer_class": "PreTrainedTokenizerFast", "unk_token": "[UNK]", "pad_token": "[PAD]",
        "cls_token": "[CLS]", "sep_token": "[SEP]", "clean_up_tokenization_spaces": True})
    rng = random.Random(17)
    expected = {name: oracle(os.path.join(out_dir, name), rng)
                for name in ("tok_chatml", "tok_bos", "tok_wordpiece")}
    with open(os.path.join(out_dir, "text_expected.json"), "w") as f:
        json.dump(expected, f, indent=1, ensure_ascii=False)
        f.write("\n")


if __name__ == "__main__":
    main()
