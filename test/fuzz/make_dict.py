#!/usr/bin/env python3
"""Writes json.dict, the libFuzzer dictionary of the config and request fuzzers: JSON syntax,
numbers at the edges of int32/int64/uint64/double, the non-finite spellings transformers
writes, the request fields, and every key and short string value of the committed configs."""
import glob
import json
import os

HERE = os.path.dirname(os.path.abspath(__file__))
TEST = os.path.dirname(HERE)
SYNTAX = ['{', '}', '[', ']', ':', ',', '"', '\\"', '\\\\', '\\u0000', '\\ud800', 'true', 'false',
          'null', '0', '-0', '-1', '1e400', '-1e400', '1e-400', '1.5', '2147483648', '-2147483649',
          '4294967296', '9223372036854775807', '9223372036854775808', '18446744073709551616',
          'Infinity', '-Infinity', 'NaN', '"Infinity"', '"NaN"']
REQUEST = ['prompt', 'max_new_tokens', 'temperature', 'top_k', 'top_p', 'min_p', 'seed',
           'stop_token_ids', 'ignore_eos', 'logprobs', 'id']


def entry(token):
    return '"%s"' % token.replace('\\', '\\\\').replace('"', '\\"')


def main():
    keys, strings = set(), set()

    def walk(o):
        if isinstance(o, dict):
            for k, v in o.items():
                keys.add(k)
                walk(v)
        elif isinstance(o, list):
            for v in o:
                walk(v)
        elif isinstance(o, str) and len(o) < 40 and o.isascii() and o.isprintable():
            strings.add(o)

    for f in sorted(glob.glob(f'{TEST}/parity/fixtures/*/config.json') +
                    glob.glob(f'{TEST}/lit/Inputs/configs/*.json')):
        with open(f) as fh:
            walk(json.load(fh))
    lines = ['# Written by make_dict.py: JSON syntax, edge numbers, request fields, config keys.']
    lines += [entry(t) for t in SYNTAX]
    lines += [entry(f'"{k}"') for k in sorted(keys | set(REQUEST))]
    lines += [entry(f'"{s}"') for s in sorted(strings - keys)]
    with open(f'{HERE}/json.dict', 'w') as fh:
        fh.write('\n'.join(lines) + '\n')


if __name__ == '__main__':
    main()
