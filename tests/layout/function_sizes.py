#!/usr/bin/env python3
"""The function-length rule of docs/design.md "Folder rules": no function outside tests/ over 80 lines.

A function's length runs from the first line of its header to its closing brace; lambdas and local
classes count as part of the function that holds them. Comments, string literals and preprocessor
lines are blanked before the braces are matched, so they cannot fool the count.

Usage: function_sizes.py --source REPO [--limit 80] [--top N]   (exit 1 and the list when one is over)
       function_sizes.py FILE...                                (every function, longest first)
       function_sizes.py --self-test
"""
import os
import re
import sys


def strip(text):
    """Comments, string and character literals and preprocessor lines blanked, newlines kept."""
    out = []
    i, n = 0, len(text)
    line_start = True
    while i < n:
        c = text[i]
        if line_start and c in ' \t':
            out.append(c)
            i += 1
            continue
        if line_start and c == '#':
            while i < n and text[i] != '\n':
                if text[i] == '\\' and i + 1 < n and text[i + 1] == '\n':
                    out.append(' \n')
                    i += 2
                    continue
                out.append(' ')
                i += 1
            continue
        line_start = False
        if text.startswith('//', i):
            while i < n and text[i] != '\n':
                out.append(' ')
                i += 1
            continue
        if text.startswith('/*', i):
            j = text.find('*/', i + 2)
            j = n if j < 0 else j + 2
            out.append(re.sub(r'[^\n]', ' ', text[i:j]))
            i = j
            continue
        m = re.match(r'R"([^(]*)\(', text[i:i + 20])
        if m and (i == 0 or not (text[i - 1].isalnum() or text[i - 1] == '_')):
            end = ')' + m.group(1) + '"'
            j = text.find(end, i + m.end())
            j = n if j < 0 else j + len(end)
            out.append('""' + re.sub(r'[^\n]', ' ', text[i + 2:j]))
            i = j
            continue
        if c in '"\'':
            if c == "'" and i > 0 and text[i - 1].isdigit():  # digit separator 1'000
                out.append(c)
                i += 1
                continue
            j = i + 1
            while j < n and text[j] != c and text[j] != '\n':
                j += 2 if text[j] == '\\' else 1
            out.append(c + ' ' * (j - i - 1) + c)
            i = j + 1
            continue
        if c == '\n':
            line_start = True
        out.append(c)
        i += 1
    return ''.join(out)


HEADER_END = re.compile(r'(\)|\bconst|\bnoexcept|\boverride|\bfinal|\bmutable|->\s*[\w:<>,\s*&]+)\s*$')


def functions(path):
    text = strip(open(path, encoding='utf-8', errors='replace').read())
    line_of = [1]
    for ch in text:
        line_of.append(line_of[-1] + (ch == '\n'))
    scopes = []       # 'ns', 'class', 'func', 'init', 'other', 'inner'
    stmt_start = 0    # where the statement being read at namespace or class scope began
    in_init = False   # a constructor's initialiser list has had a brace initialiser
    opened = {}       # depth -> (first line, name) of the function whose body opened there
    found = []
    ctor_list = re.compile(r'\)\s*(noexcept\s*)?:(?!:)')
    for i, ch in enumerate(text):
        top = scopes[-1] if scopes else 'ns'
        at_scope = top in ('ns', 'class')
        if ch == '{':
            if not at_scope:
                scopes.append('inner')
                continue
            s = text[stmt_start:i].strip()
            if re.match(r'^(inline\s+)?namespace\b', s) or s == 'extern ""':
                kind = 'ns'
            elif re.match(r'^(template\s*<.*>\s*)?(class|struct|union|enum)\b[^(]*$', s, re.S):
                kind = 'class'
            elif ctor_list.search(s) and re.search(r'[\w>]$', s):
                kind = 'init'
            elif '(' in s and (HEADER_END.search(s) or (in_init and s.endswith('}'))):
                kind = 'func'
                k = stmt_start + (len(text[stmt_start:i]) - len(text[stmt_start:i].lstrip()))
                names = re.findall(r'(operator\s*\S+?|[~\w:]+)\s*\(', s)
                opened[len(scopes)] = (line_of[k], names[0] if names else '?')
            else:
                kind = 'other'
            scopes.append(kind)
            if kind in ('ns', 'class'):
                stmt_start = i + 1
        elif ch == '}':
            kind = scopes.pop() if scopes else 'ns'
            if kind == 'func' and len(scopes) in opened:
                first, name = opened.pop(len(scopes))
                found.append((line_of[i] - first + 1, path, first, name))
            if scopes and scopes[-1] not in ('ns', 'class'):
                continue
            if kind == 'init':
                in_init = True
            elif kind in ('ns', 'class', 'func'):
                stmt_start, in_init = i + 1, False
        elif at_scope and ch == ';':
            stmt_start, in_init = i + 1, False
        elif at_scope and ch == ':' and re.match(r'^(public|private|protected)$', text[stmt_start:i].strip()):
            stmt_start = i + 1
    return found


FOLDERS = ("analysis", "topology", "comm", "kernels", "bench")

SELF_TEST = """
namespace a { namespace {
int short_one(int x) {  // 3 lines
  return x;
}
}  // namespace
struct S : Base {
  S(int v) : Base(v), m_{v, "}"} {  // 3 lines, a brace initialiser in the list
    m_.push_back(1);
  }
  int get() const { return 1; }  // 1 line
  std::vector<int> m_;
};
auto f = [] { return 1; };  // not a function body at namespace scope
auto g(int x) -> std::vector<int>
{
""" + "  x++;\n" * 79 + """  return {};  /* } */
}
}  // namespace a
"""


def self_test():
    import tempfile
    with tempfile.NamedTemporaryFile("w", suffix=".cpp", delete=False) as f:
        f.write(SELF_TEST)
    found = {name: n for n, _p, _l, name in functions(f.name)}
    os.unlink(f.name)
    expected = {"short_one": 3, "S": 3, "get": 1, "g": 83}
    if found != expected:
        print("function_sizes.py self-test failed: found", found, "expected", expected)
        return 1
    return 0


def main():
    args = sys.argv[1:]
    if args == ["--self-test"]:
        return self_test()
    if args[:1] in (["-h"], ["--help"]):
        print(__doc__)
        return 0
    if not args or args[0] != "--source":
        for n, p, l, name in sorted((f for p in args for f in functions(p)), key=lambda x: -x[0]):
            print(n, f"{p}:{l}", name)
        return 0
    source, limit, top = args[1], 80, 0
    rest = args[2:]
    while rest:
        if rest[0] == "--limit":
            limit = int(rest[1])
        elif rest[0] == "--top":
            top = int(rest[1])
        rest = rest[2:]
    found = []
    for folder in FOLDERS:
        for root, _dirs, files in os.walk(os.path.join(source, folder)):
            for fn in sorted(files):
                if fn.endswith((".cpp", ".hpp")):
                    path = os.path.join(root, fn)
                    found += [(n, os.path.relpath(p, source), l, name) for n, p, l, name in functions(path)]
    found.sort(key=lambda x: (-x[0], x[1], x[2]))
    for n, p, l, name in found[:top]:
        print(f"{n:5d}  {p}:{l}  {name}")
    over = [f for f in found if f[0] > limit]
    for n, p, l, name in over:
        print(f"{p}:{l}: {name} is {n} lines (at most {limit}): split it by what it does")
    print(f"# {len(found)} functions, {len(over)} over {limit} lines")
    return 1 if over else 0


if __name__ == "__main__":
    sys.exit(self_test() or main() if sys.argv[1:2] == ["--source"] else main())
