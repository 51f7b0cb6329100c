"""What the HunyuanOCR release fixes about its tokenizer and chat template (spec §3.6, §6).
Shared by make_fixtures.py and bench/make_random_checkpoint.py; pure Python."""

# The release's pre-tokenizer (spec §6): three Isolated splits, then ByteLevel without regex.
SPLIT_DIGITS = r"\p{N}{1,3}"
SPLIT_CJK = "[\u4e00-\u9fa5\u3040-\u309f\u30a0-\u30ff]+"
SPLIT_MAIN = (r"""[!"#$%&'()*+,\-./:;<=>?@\[\\\]^_`{|}~][A-Za-z]+|[^\r\n\p{L}\p{P}\p{S}]?[\p{L}\p{M}]+"""
              r"""| ?[\p{P}\p{S}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+""")

N_ADDED = 818
NAMED_ADDED = {0: "<｜hy_begin▁of▁sentence｜>", 1: "<｜hy_end▁of▁sentence｜>", 2: "<｜hy_▁pad▁｜>",
               6: "<｜hy_User｜>", 7: "<｜hy_Assistant｜>"}


def placeholder(n):
    return "<｜hy_place▁holder▁no▁%d｜>" % n


def added_token_names():
    names = []
    for k in range(N_ADDED):
        if k in NAMED_ADDED:
            names.append(NAMED_ADDED[k])
        elif k >= 18:
            names.append(placeholder(k - 18))
        else:
            names.append("<｜hy_reserved▁%d｜>" % k)
    return names


# 1.5 chat template (Tencent's, spec §3.6), reproduced from its described behaviour.
CHAT_TEMPLATE = (
    "{% if messages[0]['role'] == 'system' %}{% set loop_messages = messages[1:] %}"
    "{% if messages[0]['content'] is string %}{% set system_message = messages[0]['content'] %}"
    "{% else %}{% set system_message = messages[0]['content'][0]['text'] if messages[0]['content'] else '' %}{% endif %}"
    "<｜hy_begin▁of▁sentence｜>{{ system_message }}<｜hy_place▁holder▁no▁3｜>"
    "{% else %}{% set loop_messages = messages %}<｜hy_begin▁of▁sentence｜>{% endif %}"
    "{% for message in loop_messages %}{% if message['role'] == 'user' %}"
    "{% if message['content'] is string %}{{ message['content'] }}{% else %}"
    "{% for content in message['content'] %}"
    "{% if content['type'] == 'image' or 'image' in content or 'image_url' in content %}"
    "<｜hy_place▁holder▁no▁100｜><｜hy_place▁holder▁no▁102｜><｜hy_place▁holder▁no▁101｜>"
    "{% elif 'text' in content %}{{ content['text'] }}{% endif %}{% endfor %}{% endif %}<｜hy_User｜>"
    "{% elif message['role'] == 'assistant' %}{{ message['content'] }}<｜hy_Assistant｜>{% endif %}{% endfor %}"
)

def tokenizer_config(n_bpe, inline_template):
    cfg = {
        "backend": "tokenizers",
        "tokenizer_class": "TokenizersBackend",
        "bos_token": NAMED_ADDED[0],
        "eos_token": NAMED_ADDED[7],
        "pad_token": NAMED_ADDED[2],
        "clean_up_tokenization_spaces": True,
        "image_token": placeholder(102),
        "image_start_token": placeholder(100),
        "image_end_token": placeholder(101),
        "model_specific_special_tokens": {
            "image_token": placeholder(102), "image_start_token": placeholder(100),
            "image_end_token": placeholder(101)},
        "model_max_length": 1000000,
        "processor_class": "HunYuanVLProcessor",
    }
    if inline_template:
        cfg["chat_template"] = CHAT_TEMPLATE
    return cfg


