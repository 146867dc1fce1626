#!/usr/bin/env python3
"""Prints the longest C++ function bodies under the given directories.

  tools/function_lengths.py [-n N] [--max L] DIR_OR_FILE...

A function's length counts the lines from the one holding its body's opening brace to the one
holding the closing brace, both included. Braces inside comments, string and character literals
and raw strings (R"x(...)x") are ignored. A brace block at namespace or class scope is a
function body when the text before it ends in a parameter list (optionally followed by
qualifiers, a trailing return type or a constructor's initialiser list); everything nested inside
a body, lambdas included, counts towards that function. With --max L the exit status is 1 when
some function is longer than L lines.

It is a brace matcher, not a parser: macros that open or close blocks, and braces in a
constructor's initialiser list (`: x_{1} {`), are not understood.
"""
import argparse
import os
import re
import sys

SOURCE_EXTENSIONS = ('.cpp', '.cc', '.cxx', '.h', '.hpp', '.hh', '.inc')


def blank_literals(text):
    """The text with comments and literals replaced by spaces (newlines kept, so that line
    numbers survive)."""
    out = []
    i, n = 0, len(text)

    def keep_lines(chunk):
        out.append(''.join(c if c == '\n' else ' ' for c in chunk))

    while i < n:
        c = text[i]
        if text.startswith('//', i):
            j = text.find('\n', i)
            j = n if j < 0 else j
            keep_lines(text[i:j])
            i = j
        elif text.startswith('/*', i):
            j = text.find('*/', i + 2)
            j = n if j < 0 else j + 2
            keep_lines(text[i:j])
            i = j
        elif RAW_STRING.match(text, i) and not (i and (text[i - 1].isalnum() or text[i - 1] == '_')):
            quote = text.index('"', i)
            paren = text.find('(', quote)
            delimiter = text[quote + 1:paren]
            end = text.find(')' + delimiter + '"', paren)
            j = n if end < 0 else end + len(delimiter) + 2
            keep_lines(text[i:j])
            i = j
        elif c in '"\'':
            # A ' between digits is a digit separator (1'000), not a character literal.
            if c == "'" and i and text[i - 1].isalnum() and i + 1 < n and text[i + 1].isalnum():
                out.append(' ')
                i += 1
                continue
            j = i + 1
            while j < n and text[j] != c and text[j] != '\n':
                j += 2 if text[j] == '\\' else 1
            j = min(j + 1, n)
            keep_lines(text[i:j])
            i = j
        else:
            out.append(c)
            i += 1
    return ''.join(out)


SCOPE = re.compile(r'^(template\s*<.*>\s*)?(namespace|class|struct|union|enum|extern)\b')
RAW_STRING = re.compile(r'(u8|u|U|L)?R"')
QUALIFIERS = re.compile(r'(\s*(const|noexcept(\s*\([^()]*\))?|override|final|mutable|volatile|&&|&|'
                        r'->\s*[\w:<>,\s*&]+))*\s*$')


def matching_open(header, close):
    depth = 0
    for k in range(close, -1, -1):
        if header[k] == ')':
            depth += 1
        elif header[k] == '(':
            depth -= 1
            if depth == 0:
                return k
    return -1


def strip_initialisers(header):
    """Cuts a constructor's initialiser list: the first ':' (not '::') after a top-level ')'."""
    depth = 0
    for k, c in enumerate(header):
        if c in '(<[':
            depth += 1
        elif c in ')>]':
            depth -= 1
        elif c == ':' and depth == 0 and header[k - 1:k] != ':' and header[k + 1:k + 2] != ':':
            if header[:k].rstrip().endswith(')'):
                return header[:k]
    return header


def function_name(header):
    """The function's name when `header` (the text before a '{') ends in a signature, else None."""
    header = ' '.join(header.split())
    if not header or SCOPE.match(header):
        return None
    header = strip_initialisers(header)
    header = header[:QUALIFIERS.search(header).start()].rstrip()
    if not header.endswith(')'):
        return None
    open_paren = matching_open(header, len(header) - 1)
    if open_paren <= 0:
        return None
    before = header[:open_paren].rstrip()
    if '=' in re.sub(r'operator\s*\S+$', '', before) or before.endswith(']'):
        return None  # a variable initialised by a call, or a lambda
    m = re.search(r'(([A-Za-z_]\w*\s*::\s*)*operator\s*\S+|~?[A-Za-z_]\w*(\s*::\s*~?[A-Za-z_]\w*)*)$', before)
    if not m:
        return None
    name = re.sub(r'\s+', '', m.group(1))
    if name in ('if', 'for', 'while', 'switch', 'catch', 'return', 'sizeof', 'decltype', 'alignas'):
        return None
    return name


def functions(path):
    with open(path, encoding='utf-8', errors='replace') as f:
        text = blank_literals(f.read())
    found = []
    # Each open block: its kind ('scope' for namespaces and classes, 'function', 'other'), the
    # function's name and the line of its opening brace.
    stack = []
    header_start = 0
    line = 1
    in_function = lambda: any(kind != 'scope' for kind, _, _ in stack)
    for k, c in enumerate(text):
        if c == '\n':
            line += 1
        elif c == '{':
            if in_function():
                stack.append(('other', None, line))
            else:
                header = text[header_start:k]
                # A preprocessor line ends the header too.
                header = '\n'.join(l for l in header.split('\n') if not l.lstrip().startswith('#'))
                name = function_name(header)
                if name:
                    stack.append(('function', name, line))
                elif SCOPE.match(' '.join(header.split())):
                    stack.append(('scope', None, line))
                else:
                    stack.append(('other', None, line))  # an initialiser, a lambda at namespace scope
            header_start = k + 1
        elif c == '}':
            if stack:
                kind, name, start = stack.pop()
                if kind == 'function':
                    found.append((line - start + 1, path, start, name))
            header_start = k + 1
        elif c == ';' and not in_function():
            header_start = k + 1
    return found


def sources(paths):
    for p in paths:
        if os.path.isfile(p):
            yield p
        for root, _, files in os.walk(p):
            for f in sorted(files):
                if f.endswith(SOURCE_EXTENSIONS):
                    yield os.path.join(root, f)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('paths', nargs='+')
    parser.add_argument('-n', type=int, default=10, help='how many to print (default 10)')
    parser.add_argument('--max', type=int, help='exit 1 when a function is longer than this')
    args = parser.parse_args()
    found = [f for p in sources(args.paths) for f in functions(p)]
    found.sort(key=lambda f: (-f[0], f[1], f[2]))
    for length, path, start, name in found[:args.n]:
        print(f'{length:5d}  {path}:{start}  {name}')
    if args.max is not None:
        over = [f for f in found if f[0] > args.max]
        if over:
            print(f'{len(over)} function(s) longer than {args.max} lines', file=sys.stderr)
            return 1
    return 0


if __name__ == '__main__':
    sys.exit(main())
